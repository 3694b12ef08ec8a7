package bitrixfake

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Timeline comments (crm.timeline.comment.list): every fourth company, contact and deal has one
// or two, in BB-code, some mentioning a user or carrying a file. The method requires ENTITY_ID
// and ENTITY_TYPE: one record at a time.

var commentTypes = map[string]int{"company": etCompany, "contact": etContact, "deal": etDeal}

// comments returns the timeline comments of one record: the generated ones not deleted since,
// then the ones added since (mutate.go).
func (p *Portal) comments(typ string, id int) []object {
	et, ok := commentTypes[typ]
	if !ok || indexOf(p.crmIDs(et), id) < 0 {
		return nil
	}
	tc := p.mut.timeline[[2]int{et, id}]
	r := p.rng(kindSmart+3, et*10_000_000+id)
	var out []object
	for k := range p.generatedComments(et, id) {
		cid := timelineCommentID(et, id, k)
		created := p.past(generatedCommentTime(p.epoch(), id, k))
		user := p.pickUser(r)
		text := fmt.Sprintf("Созвонились, договорились о встрече %d", cid)
		files := any(object{})
		if k == 1 {
			text = fmt.Sprintf("[USER=%d]Коллега[/USER], посмотрите, пожалуйста", p.pickUser(r))
			files = object{{"1", object{{"id", 1}, {"date", p.isoDate(created)}, {"type", "image"}, {"name", "scan.png"},
				{"size", 43}, {"authorId", user}, {"urlDownload", "https://portal.example/disk/downloadFile/930/?&ncc=1&filename=scan.png"}}}}
		}
		if tc != nil && tc.gone[k] {
			continue
		}
		out = append(out, object{{"ID", strconv.Itoa(cid)}, {"ENTITY_ID", strconv.Itoa(id)}, {"ENTITY_TYPE", typ},
			{"CREATED", p.isoDate(created)}, {"COMMENT", text}, {"AUTHOR_ID", strconv.Itoa(user)}, {"FILES", files}})
	}
	if tc != nil {
		for _, a := range tc.added {
			if tc.gone[a.k] {
				continue
			}
			cid := timelineCommentID(et, id, a.k)
			out = append(out, object{{"ID", strconv.Itoa(cid)}, {"ENTITY_ID", strconv.Itoa(id)}, {"ENTITY_TYPE", typ},
				{"CREATED", p.isoDate(a.at)}, {"COMMENT", fmt.Sprintf("Новый комментарий %d", cid)},
				{"AUTHOR_ID", strconv.Itoa(a.author)}, {"FILES", object{}}})
		}
	}
	return out
}

// generatedComments is how many timeline comments a record was generated with: every fourth
// record has one or two; a record added since (mutate.go) has none.
func (p *Portal) generatedComments(et, id int) int {
	gen := map[int][]int{etCompany: p.genCompanies, etContact: p.genContacts, etDeal: p.genDeals}[et]
	if id%4 != 0 || indexOf(gen, id) < 0 {
		return 0
	}
	return 1 + id%3%2
}

// generatedCommentTime is the date of generated comment k of a record.
func generatedCommentTime(epoch time.Time, id, k int) time.Time {
	return epoch.AddDate(9, 0, id%300).Add(time.Duration(k) * time.Hour)
}

func (p *Portal) timelineCommentList(params map[string]any) answer {
	filter := filterParam(params)
	var id, typ string
	for k, v := range filter {
		switch strings.ToUpper(strings.TrimLeft(k, "=")) {
		case "ENTITY_ID":
			id = strval(v)
		case "ENTITY_TYPE":
			typ = strings.ToLower(strval(v))
		}
	}
	if id == "" || typ == "" {
		return fail(http.StatusBadRequest, "", "ENTITY_ID and ENTITY_TYPE are required in the filter")
	}
	if et, ok := commentTypes[typ]; ok && p.crmDeleted(et, intval(id)) {
		// The record is gone: the portal no longer answers for its timeline (the issue's
		// observation of a deal deleted on a portal; the docs list only "Access denied.").
		return fail(http.StatusBadRequest, "", "Not found")
	}
	rows := p.comments(typ, intval(id))
	if rows == nil {
		rows = []object{}
	}
	page, total, next := pageOf(rows, startParam(params))
	return answer{result: page, total: &total, next: next, cost: p.opts.CallCost}
}

// CommentCount is how many timeline comments the portal's companies, contacts and deals have.
func (p *Portal) CommentCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for typ, et := range commentTypes {
		for _, id := range p.crmIDs(et) {
			n += len(p.comments(typ, id))
		}
	}
	return n
}
