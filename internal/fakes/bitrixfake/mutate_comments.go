package bitrixfake

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Comments added and deleted between two runs (mutate.go says which dates they move).

// AddTaskComment adds a comment to a task, by the webhook's user, and returns its id: a message
// of the task's chat (taskMessageBase + task*64 + k) for a task in the new card, an old-card
// comment (task*64 + k) otherwise, as Delete(DeleteTaskComments, id) takes it. The task's
// activityDate moves to the comment's date and its commentsCount grows; its changedDate stays.
func (p *Portal) AddTaskComment(taskID int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addTaskComment(taskID)
}

func (p *Portal) addTaskComment(taskID int) (int, error) {
	t, ok := p.tasks.byID[taskID]
	if !ok {
		return 0, fmt.Errorf("bitrixfake: no task %d to comment", taskID)
	}
	if t.comments > maxTaskComments {
		return 0, fmt.Errorf("bitrixfake: task %d has the most comments the fake holds", taskID)
	}
	k := t.comments
	at := p.stamp()
	if t.addedAt == nil {
		t.addedAt = map[int]time.Time{}
	}
	t.addedAt[k] = at
	t.comments++
	t.activity = at
	if t.chat {
		return taskMessageBase + t.id*64 + k, nil
	}
	return t.id*64 + k, nil
}

// DeleteTaskComment deletes a task's comment by the id AddTaskComment or the portal's lists give
// (Delete(DeleteTaskComments, id)). The task's commentsCount drops; no date of the task moves.
func (p *Portal) DeleteTaskComment(commentID int) error {
	return p.Delete(DeleteTaskComments, commentID)
}

// timelineEntity maps a CRM entity name to the ENTITY_TYPE of its timeline comments.
func timelineEntity(entity string) (string, int, bool) {
	switch entity {
	case DeleteCompanies:
		return "company", etCompany, true
	case DeleteContacts:
		return "contact", etContact, true
	case DeleteDeals:
		return "deal", etDeal, true
	}
	return "", 0, false
}

// AddTimelineComment adds a timeline comment to a company, contact or deal (DeleteCompanies,
// DeleteContacts, DeleteDeals), by the webhook's user, and returns its id. The record's
// lastActivityTime and lastActivityBy move to it (unless Options.QuietTimeline); its updatedTime
// stays.
func (p *Portal) AddTimelineComment(entity string, id int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addTimelineComment(entity, id)
}

func (p *Portal) addTimelineComment(entity string, id int) (int, error) {
	_, et, ok := timelineEntity(entity)
	if !ok {
		return 0, fmt.Errorf("bitrixfake: %s have no timeline comments", entity)
	}
	if indexOf(p.crmIDs(et), id) < 0 {
		return 0, fmt.Errorf("bitrixfake: no %s %d to comment", entity, id)
	}
	tc := p.mut.timeline[[2]int{et, id}]
	if tc == nil {
		tc = &timelineChange{}
		p.mut.timeline[[2]int{et, id}] = tc
	}
	k := firstAddedComment + len(tc.added)
	if k >= maxTimelineComments {
		return 0, fmt.Errorf("bitrixfake: %s %d has the most timeline comments the fake holds", entity, id)
	}
	at := p.stamp()
	tc.added = append(tc.added, timelineAdd{k: k, at: at, author: p.actor()})
	if !p.opts.QuietTimeline {
		ch := p.crmChangeOf(et, id)
		ch.activity, ch.activityBy = at, p.actor()
	}
	return timelineCommentID(et, id, k), nil
}

// timelineCommentID is the id of comment k of a record's timeline.
func timelineCommentID(et, id, k int) int { return et*10_000_000 + id*maxTimelineComments + k }

// DeleteTimelineComment deletes a timeline comment by its id. No date of its record moves.
func (p *Portal) DeleteTimelineComment(commentID int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.deleteTimelineComment(commentID) {
		return fmt.Errorf("bitrixfake: no timeline comment %d to delete", commentID)
	}
	return nil
}

func (p *Portal) deleteTimelineComment(commentID int) bool {
	et := commentID / 10_000_000
	rest := commentID % 10_000_000
	id, k := rest/maxTimelineComments, rest%maxTimelineComments
	typ := map[int]string{etCompany: "company", etContact: "contact", etDeal: "deal"}[et]
	if typ == "" || !slices.ContainsFunc(p.comments(typ, id), func(c object) bool {
		v, _ := c.get("ID")
		return v == strconv.Itoa(commentID)
	}) {
		return false
	}
	tc := p.mut.timeline[[2]int{et, id}]
	if tc == nil {
		tc = &timelineChange{}
		p.mut.timeline[[2]int{et, id}] = tc
	}
	if tc.gone == nil {
		tc.gone = map[int]bool{}
	}
	tc.gone[k] = true
	return true
}

// TimelineCommentIDs returns the ids of a record's timeline comments, ascending, for tests.
func (p *Portal) TimelineCommentIDs(entity string, id int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	typ, _, ok := timelineEntity(entity)
	if !ok {
		return nil
	}
	var out []int
	for _, c := range p.comments(typ, id) {
		v, _ := c.get("ID")
		n, _ := strconv.Atoi(strval(v))
		out = append(out, n)
	}
	return out
}
