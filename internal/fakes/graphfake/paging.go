package graphfake

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Cursors are opaque to clients and anchored on an item: "after" means after that item. A
// cursor whose item was deleted, or that was issued before InvalidateCursors, is refused, as
// Meta documents ("a cursor will be invalidated if the item is deleted").
func (s *Server) cursor(anchor string, hop int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d|%s|%d", s.epoch, anchor, hop))
}

func (s *Server) decodeCursor(c string) (anchor string, hop int, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", 0, false
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || parts[0] != strconv.Itoa(s.epoch) {
		return "", 0, false
	}
	hop, err = strconv.Atoi(parts[2])
	return parts[1], hop, err == nil
}

// pagingStyle is how an edge shows its paging, after the real answers in the fixtures.
type pagingStyle int

const (
	// linked: cursors before and after, next while more follow, previous after the first page
	// (IG User media).
	linked pagingStyle = iota
	// linkedAfterOnly: cursors.after and next while more follow; no paging object at all on the
	// last page (comments, replies).
	linkedAfterOnly
	// cursorsOnly: cursors, never next or previous (business_discovery media, stories); the last
	// page has no after cursor.
	cursorsOnly
)

// page is one page of an edge over ids.
type page struct {
	from, to int
	after    string // cursor of the next page; "" on the last
	before   string
	empty    bool // an empty page that still links the next one (a fault)
}

var errCursor = errBadRequest(100, 0, "(#100) The After Cursor specified exceeds the max limit supported by this endpoint")

// startAnchor anchors the cursor of an empty first page: the list starts before its first item.
const startAnchor = "^"

// paginate cuts ids (newest first) after the item the cursor names. emptyOnce serves the page
// after a cursor empty once, with a fresh cursor (EmptyPageWithNext); emptyRun serves the page
// at each position empty that many times first, handing back the cursor it was asked with and
// a next link (EmptyPages): key names the list, so that every list counts its own.
func (s *Server) paginate(ids []string, after string, limit, maxLimit int, emptyOnce bool, emptyRun int, key string) (page, *apiError) {
	if limit <= 0 {
		limit = 25
	}
	limit = min(limit, maxLimit)
	start, hop := 0, 0
	if after != "" {
		anchor, h, ok := s.decodeCursor(after)
		if !ok {
			return page{}, errCursor
		}
		i := indexOf(ids, anchor)
		if i < 0 && anchor != startAnchor {
			return page{}, errCursor
		}
		start, hop = i+1, h
		if emptyOnce && hop == 0 && start < len(ids) {
			return page{from: start, to: start, after: s.cursor(anchor, 1), before: s.cursor(anchor, 1), empty: true}, nil
		}
	}
	if at := key + "|" + strconv.Itoa(start); emptyRun > 0 && start < len(ids) && s.empties[at] < emptyRun {
		s.empties[at]++
		echo := after
		if echo == "" {
			echo = s.cursor(startAnchor, 0)
		}
		return page{from: start, to: start, after: echo, before: echo, empty: true}, nil
	}
	end := min(start+limit, len(ids))
	p := page{from: start, to: end}
	if end > start {
		p.before = s.cursor(ids[start], 0)
		if end < len(ids) {
			p.after = s.cursor(ids[end-1], 0)
		}
	}
	return p, nil
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// paging renders the paging object of p (nil when the style shows none). link is the edge's
// path with the query to repeat in next/previous; the links carry the caller's token as real
// ones do.
func (s *Server) paging(p page, style pagingStyle, link string, q url.Values, token string) obj {
	switch style {
	case cursorsOnly:
		cur := obj{}
		if p.before != "" {
			cur.add("before", p.before)
		}
		if p.after != "" {
			cur.add("after", p.after)
		}
		if len(cur) == 0 {
			return nil
		}
		return obj{{"cursors", cur}}
	case linkedAfterOnly:
		if p.after == "" {
			return nil
		}
		return obj{{"cursors", obj{{"after", p.after}}}, {"next", s.link(link, q, token, "after", p.after)}}
	}
	cur := obj{}
	if p.before != "" {
		cur.add("before", p.before)
	}
	if p.after != "" {
		cur.add("after", p.after)
	}
	o := obj{{"cursors", cur}}
	if p.from > 0 && p.before != "" {
		o.add("previous", s.link(link, q, token, "before", p.before))
	}
	if p.after != "" {
		o.add("next", s.link(link, q, token, "after", p.after))
	}
	return o
}

func (s *Server) link(path string, q url.Values, token, key, cursor string) string {
	v := url.Values{}
	for k, vs := range q {
		if k != "after" && k != "before" && k != "access_token" {
			v[k] = vs
		}
	}
	v.Set(key, cursor)
	return publicBase + "/" + path + "?access_token=" + token + "&" + v.Encode()
}

// publicBase is where the paging links point, as on the real platform: a client must rebuild
// its next request from the cursor instead of following a link to a host it was not given.
const publicBase = "https://graph.facebook.com/v23.0"

func limitOf(f field, q url.Values) int {
	v := q.Get("limit")
	if m, ok := f.mods["limit"]; ok {
		v = m
	}
	n, _ := strconv.Atoi(v)
	return n
}

func afterOf(f field, q url.Values) string {
	if m, ok := f.mods["after"]; ok {
		return m
	}
	return q.Get("after")
}

func (s *Server) mediaEdge(a *account, f field, v view, path string, q url.Values) (obj, *apiError) {
	ms := live(a.media)
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	after := afterOf(f, q)
	if after != "" && a.spec.RejectCursorOnce && !a.rejectedCursor {
		a.rejectedCursor = true
		return nil, errCursor
	}
	key := "media:" + a.id
	if v.discovery {
		key = "discovery_" + key
	}
	p, err := s.paginate(ids, after, limitOf(f, q), 100, a.spec.EmptyPageWithNext, a.spec.EmptyPages, key)
	if err != nil {
		return nil, err
	}
	data := []obj{}
	for _, m := range ms[p.from:p.to] {
		mo, err := s.renderMedia(m, subOr(f.sub, "id"), v, path)
		if err != nil {
			return nil, err
		}
		data = append(data, mo)
	}
	if after == "" && a.spec.DeleteBetweenPages && !a.servedFirstPage && p.to > p.from {
		// The post the next page's cursor is anchored on is deleted before the next request.
		ms[p.to-1].deleted = true
	}
	if after == "" {
		a.servedFirstPage = true
	}
	style := linked
	if v.discovery {
		style = cursorsOnly
	}
	o := obj{{"data", data}}
	if pg := s.paging(p, style, a.id+"/media", q, v.token); pg != nil {
		o.add("paging", pg)
	}
	return o, nil
}

func (s *Server) storiesEdge(a *account, sub []field, v view) (obj, *apiError) {
	data := []obj{}
	var ids []string
	for _, m := range a.stories {
		if s.now().Sub(m.ts) > storyLife || m.deleted {
			continue // stories live 24 hours
		}
		mo, err := s.renderMedia(m, subOr(sub, "id"), v, "")
		if err != nil {
			return nil, err
		}
		data = append(data, mo)
		ids = append(ids, m.id)
	}
	o := obj{{"data", data}}
	if len(ids) > 0 {
		o.add("paging", obj{{"cursors", obj{{"before", s.cursor(ids[0], 0)}, {"after", s.cursor(ids[len(ids)-1], 0)}}}})
	}
	return o, nil
}

func (s *Server) commentsEdge(m *media, f field, v view, path string, q url.Values) (obj, *apiError) {
	ids := make([]string, len(m.comments))
	for i, c := range m.comments {
		ids[i] = c.id
	}
	p, err := s.paginate(ids, afterOf(f, q), limitOf(f, q), 50, false, m.owner.spec.EmptyCommentPages, "comments:"+m.id)
	if err != nil {
		return nil, err
	}
	data := []obj{}
	for _, c := range m.comments[p.from:p.to] {
		co, err := s.renderComment(c, subOr(f.sub, "timestamp", "text", "id"), v, path)
		if err != nil {
			return nil, err
		}
		data = append(data, co)
	}
	o := obj{{"data", data}}
	if pg := s.paging(p, linkedAfterOnly, m.id+"/comments", q, v.token); pg != nil {
		o.add("paging", pg)
	}
	return o, nil
}

func (s *Server) repliesEdge(c *comment, f field, v view, path string, q url.Values) (obj, *apiError) {
	ids := make([]string, len(c.replies))
	for i, r := range c.replies {
		ids[i] = r.id
	}
	// An edge inlined in its comment's page (q nil) is rendered as it is: only a request of the
	// edge itself meets the run of empty pages. Were the inlined one to count too, what a
	// comments page holds would depend on how often it was read before (a rerun after a kill
	// reads it again), and two readers of the same data would see different pages.
	empties := c.media.owner.spec.EmptyCommentPages
	if q == nil {
		empties = 0
	}
	p, err := s.paginate(ids, afterOf(f, q), limitOf(f, q), 50, false, empties, "replies:"+c.id)
	if err != nil {
		return nil, err
	}
	data := []obj{}
	for _, r := range c.replies[p.from:p.to] {
		ro, err := s.renderComment(r, subOr(f.sub, "timestamp", "text", "id"), v, path)
		if err != nil {
			return nil, err
		}
		data = append(data, ro)
	}
	o := obj{{"data", data}}
	if pg := s.paging(p, linkedAfterOnly, c.id+"/replies", q, v.token); pg != nil {
		o.add("paging", pg)
	}
	return o, nil
}
