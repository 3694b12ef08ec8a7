package bitrixfake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Churn: a realistic mix of changes between two runs of a migration, for tests and benchmarks of
// delta passes. Issue 35 measured a portal of about 9,000 companies, contacts, deals and tasks
// after 1% of it changed: 89 edits, 10 additions, 14 comments, 7 deletions. Churn applies that
// mix, scaled: edits are fraction of the records, additions, comments and deletions in the same
// proportion to the edits, spread over the entities by their sizes and over task comments and
// timeline comments evenly (a seventh of the comments are deletions of existing ones).
//
// Only changes a client can observe are made: tasks the webhook's user cannot see, and comments
// in task chats that refuse it, are left alone; a task with subtasks is not deleted (its subtasks
// would move to its parent, a change of records the report would not name). A record is edited
// or deleted, not both.

// Churned entities, as ChurnReport names them: DeleteCompanies, DeleteContacts, DeleteDeals,
// DeleteTasks, DeleteTaskComments and TimelineComments.
var churnEntities = []string{DeleteCompanies, DeleteContacts, DeleteDeals, DeleteTasks, DeleteTaskComments, TimelineComments}

// ChurnReport is exactly what a Churn changed.
type ChurnReport struct {
	// At is the date of the first change: every change is dated at or after it, and after every
	// answer the portal served before Churn.
	At time.Time
	// Changes are the changes by entity (every churned entity has an entry).
	Changes map[string]*Changes
}

// Changes are the ids an entity's records changed by, ascending. For comments, Added and Deleted
// are comment ids (as AddTaskComment and AddTimelineComment return them) and Owners names the
// record of each; comments are not edited.
type Changes struct {
	Edited, Added, Deleted []int
	Owners                 map[int]Owner
}

// Owner is the record a comment belongs to.
type Owner struct {
	Entity string
	ID     int
}

// Total is how many changes the report holds.
func (r ChurnReport) Total() int {
	n := 0
	for _, c := range r.Changes {
		n += len(c.Edited) + len(c.Added) + len(c.Deleted)
	}
	return n
}

// String summarizes the report, one entity a line.
func (r ChurnReport) String() string {
	var b strings.Builder
	for _, e := range churnEntities {
		c := r.Changes[e]
		fmt.Fprintf(&b, "%s: %d edited, %d added, %d deleted\n", e, len(c.Edited), len(c.Added), len(c.Deleted))
	}
	return b.String()
}

// Churn changes about fraction of the portal's companies, contacts, deals and tasks, with their
// task comments and timeline comments, in issue 35's mix, and returns what it changed. The same
// seed on portals generated alike makes the same changes. The changes are made at once, under
// the portal's lock: a request sees all of them or none.
func (p *Portal) Churn(seed int64, fraction float64) ChurnReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := rand.New(rand.NewPCG(uint64(seed), 0x6368_7572_6e))
	rep := ChurnReport{At: p.stamp(), Changes: map[string]*Changes{}}
	for _, e := range churnEntities {
		rep.Changes[e] = &Changes{}
	}
	records := []string{DeleteCompanies, DeleteContacts, DeleteDeals, DeleteTasks}
	visible := slices.Clone(p.tasks.visible) // kept up to date below: building it is O(tasks)
	live := func(entity string) []int {
		if entity == DeleteTasks {
			return visible
		}
		et, _ := crmTypeOf(entity)
		return p.crmIDs(et)
	}
	total := 0
	for _, e := range records {
		total += len(live(e))
	}
	edits := int(math.Round(fraction * float64(total)))
	scaled := func(per89 int) int { return int(math.Round(float64(edits) * float64(per89) / 89)) }
	additions, comments, deletions := scaled(10), scaled(14), scaled(7)

	touched := map[Owner]bool{}
	// pickRecord draws an entity by its size and a record of it not touched yet.
	pickRecord := func() (string, int, bool) {
		sizes := make([]int, len(records))
		sum := 0
		for i, e := range records {
			sizes[i] = len(live(e))
			sum += sizes[i]
		}
		if sum == 0 {
			return "", 0, false
		}
		for range 100 {
			n := r.IntN(sum)
			i := 0
			for n >= sizes[i] {
				n -= sizes[i]
				i++
			}
			id := live(records[i])[n]
			if !touched[Owner{records[i], id}] {
				return records[i], id, true
			}
		}
		return "", 0, false
	}
	for range edits {
		e, id, ok := pickRecord()
		if !ok || p.edit(e, id) != nil {
			break
		}
		touched[Owner{e, id}] = true
		rep.Changes[e].Edited = append(rep.Changes[e].Edited, id)
	}
	for range additions {
		e, _, ok := pickRecord() // the entity, by size
		if !ok {
			break
		}
		id, err := p.add(e)
		if err != nil {
			break
		}
		touched[Owner{e, id}] = true
		rep.Changes[e].Added = append(rep.Changes[e].Added, id)
		if e == DeleteTasks {
			visible = append(visible, id)
		}
	}
	deleted := 0
	childless := p.churnableTasks(true)
	for attempt := 0; deleted < deletions && attempt < 20*deletions; attempt++ {
		e, id, ok := pickRecord()
		if !ok {
			break
		}
		if _, found := slices.BinarySearch(childless, id); e == DeleteTasks && !found {
			continue // a parent: see the comment above
		}
		touched[Owner{e, id}] = true
		var gone bool
		if e == DeleteTasks {
			gone = p.deleteTask(id)
			visible = slices.DeleteFunc(visible, func(v int) bool { return v == id })
		} else {
			gone = p.deleteCRM(e, id)
		}
		if gone {
			rep.Changes[e].Deleted = append(rep.Changes[e].Deleted, id)
			deleted++
		}
	}
	// Comments last: on records that stay.
	for i := range comments {
		p.churnComment(r, rep, i%2 == 0, i%7 == 6)
	}
	for _, c := range rep.Changes {
		slices.Sort(c.Edited)
		slices.Sort(c.Added)
		slices.Sort(c.Deleted)
	}
	return rep
}

// churnableTasks are the tasks a client sees, ascending; childless leaves out the ones other
// tasks name as parent.
func (p *Portal) churnableTasks(childless bool) []int {
	parents := map[int]bool{}
	if childless {
		for _, t := range p.tasks.byID {
			parents[t.parent] = true
		}
	}
	var out []int
	for _, id := range p.tasks.visible {
		if !parents[id] {
			out = append(out, id)
		}
	}
	return out
}

// churnComment adds or deletes one comment of a task or of a CRM record's timeline, reported in
// rep; it does nothing when no record can take it.
func (p *Portal) churnComment(r *rand.Rand, rep ChurnReport, onTask, deletion bool) {
	if onTask {
		var tasks []*task
		for _, id := range p.tasks.visible {
			t := p.tasks.byID[id]
			if t.chatRefused || (!deletion && t.comments > maxTaskComments) || (deletion && t.commentCount() == 0) {
				continue
			}
			tasks = append(tasks, t)
		}
		if len(tasks) == 0 {
			return
		}
		t := tasks[r.IntN(len(tasks))]
		c := rep.Changes[DeleteTaskComments]
		if c.Owners == nil {
			c.Owners = map[int]Owner{}
		}
		if !deletion {
			id, err := p.addTaskComment(t.id)
			if err == nil {
				c.Added = append(c.Added, id)
				c.Owners[id] = Owner{DeleteTasks, t.id}
			}
			return
		}
		var ks []int
		for _, k := range t.commentIndexes() {
			// Not the system message of the task's creation, which is no comment, nor one this
			// churn added.
			if _, added := t.addedAt[k]; !(t.chat && k == 0) && !added {
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 {
			return
		}
		k := ks[r.IntN(len(ks))]
		id := t.id*64 + k
		if t.chat {
			id += taskMessageBase
		}
		if p.deleteTaskComment(id) {
			c.Deleted = append(c.Deleted, id)
			c.Owners[id] = Owner{DeleteTasks, t.id}
		}
		return
	}
	entity := []string{DeleteCompanies, DeleteContacts, DeleteDeals}[r.IntN(3)]
	typ, et, _ := timelineEntity(entity)
	ids := p.crmIDs(et)
	if len(ids) == 0 {
		return
	}
	c := rep.Changes[TimelineComments]
	if c.Owners == nil {
		c.Owners = map[int]Owner{}
	}
	if !deletion {
		id := ids[r.IntN(len(ids))]
		if cid, err := p.addTimelineComment(entity, id); err == nil {
			c.Added = append(c.Added, cid)
			c.Owners[cid] = Owner{entity, id}
		}
		return
	}
	for range 100 { // a record with comments: every fourth has some
		id := ids[r.IntN(len(ids))]
		rows := p.comments(typ, id)
		if len(rows) == 0 {
			continue
		}
		v, _ := rows[r.IntN(len(rows))].get("ID")
		cid := intval(v)
		if _, added := c.Owners[cid]; added {
			continue
		}
		if p.deleteTimelineComment(cid) {
			c.Deleted = append(c.Deleted, cid)
			c.Owners[cid] = Owner{entity, id}
		}
		return
	}
}
