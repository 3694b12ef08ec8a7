package bitrixfake

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Changes made on the portal between two runs of a migration, for tests and benchmarks (Edit,
// Add here, comments in mutate_comments.go, product rows in products.go, Delete in delete.go,
// Churn in churn.go). Each change is dated by the portal's clock and moves the fields the
// documentation says it moves:
//
//   - an edit of a CRM record moves its updatedTime and updatedBy (crm.item.list; DATE_MODIFY
//     and MODIFY_BY_ID in the classic lists): "date and time when the item was last modified"
//     (DOCS crm/universal/object-fields.md);
//   - a timeline comment added to a CRM record moves its lastActivityTime and lastActivityBy
//     ("date and time of the last activity in the timeline", "the user who last interacted in
//     the timeline", same page), not its updatedTime: the record itself did not change. Options.
//     QuietTimeline keeps lastActivityTime still, for a client that must not rely on it;
//   - an edit of a task moves its changedDate ("modification date") and its activityDate ("date
//     of last activity", DOCS tasks/fields.md);
//   - a comment added to a task moves its activityDate and its commentsCount ("number of
//     comments"), not its changedDate;
//   - a deletion of a comment lowers the task's commentsCount; the docs say nothing of dates
//     moving when a task comment or a timeline comment is deleted, so nothing moves (the
//     conservative reading: a client finds such a deletion only by reading the parent's
//     comments again);
//   - an edit of a user moves its TIMESTAMP_X, of a workgroup its DATE_UPDATE and DATE_ACTIVITY
//     (DOCS sonet-group/sonet-group-get.md); product rows (products.go) move nothing of their
//     deal.
//
// Dates have a resolution of a second, so a change is dated at least a second after the last
// answer the portal served: a client that read before the change and filters on "> the time it
// read" finds it. When the portal's clock has not moved that far (a test's manual Clock), the
// portal moves its own clock forward by the difference (Portal.now), so that no record is ever
// dated in the portal's future.

// TimelineComments names timeline comments of companies, contacts and deals in ChurnReport.
const TimelineComments = "timeline_comments"

// SmartItems names the items of the smart process with the given entityTypeId for Edit.
func SmartItems(entityTypeID int) string { return "smart_" + strconv.Itoa(entityTypeID) }

// Users and Groups name the portal's users and workgroups for Edit.
const (
	Users  = "users"
	Groups = "groups"
)

// mutations is what changed on the portal since it was generated.
type mutations struct {
	crm      map[int]map[int]*crmChange // entityTypeId: id: change
	crmMax   map[int]int                // entityTypeId: the highest id it ever had
	timeline map[[2]int]*timelineChange // entityTypeId, id: its timeline's changes
	edits    map[string]map[int]int     // Users, Groups: id: edits
	products map[int]*productChange     // deal id: its product rows' changes (products.go)
}

func newMutations() mutations {
	return mutations{crm: map[int]map[int]*crmChange{}, crmMax: map[int]int{}, timeline: map[[2]int]*timelineChange{},
		products: map[int]*productChange{}, edits: map[string]map[int]int{Users: {}, Groups: {}}}
}

// crmChange is what changed on a CRM record; zero times are the generated ones.
type crmChange struct {
	created, updated, activity time.Time
	updatedBy, activityBy      int
	edits                      int
}

// timelineChange is what changed in a record's timeline: comments added (comment index k from
// firstAddedComment) and comments deleted, by index.
type timelineChange struct {
	added []timelineAdd
	gone  map[int]bool
}

type timelineAdd struct {
	k      int
	at     time.Time
	author int
}

// firstAddedComment is the index of the first comment added to a record's timeline: the
// generated ones are 0 and 1. maxTimelineComments bounds the index (the comment id layout).
const (
	firstAddedComment   = 2
	maxTimelineComments = 10
)

// now is the portal's clock: Options.Now, moved forward by what stamp had to.
func (p *Portal) now() time.Time { return p.opts.Now().Add(p.shift) }

// past bounds a generated date by the portal's clock when it was made: no record was created or
// changed in the portal's future.
func (p *Portal) past(t time.Time) time.Time {
	if t.After(p.born) {
		return p.born
	}
	return t
}

// stamp dates a change made now: at the portal's clock, whole seconds, at least a second after
// the last answer served; the portal's clock is moved forward when it shows less.
func (p *Portal) stamp() time.Time {
	now := p.now()
	at := now.Truncate(time.Second)
	if !p.lastServed.IsZero() {
		if after := p.lastServed.Truncate(time.Second).Add(time.Second); at.Before(after) {
			at = after
		}
	}
	if at.After(now) {
		p.shift += at.Sub(now)
	}
	return at
}

// actor is the user a change made through the mutation API is attributed to: the webhook's.
func (p *Portal) actor() int {
	id, err := strconv.Atoi(p.opts.UserID)
	if err != nil || id <= 0 {
		return 1
	}
	return id
}

// crmTypeOf maps an entity name to its entityTypeId.
func crmTypeOf(entity string) (int, bool) {
	et, ok := map[string]int{DeleteCompanies: etCompany, DeleteContacts: etContact, DeleteDeals: etDeal}[entity]
	return et, ok
}

// crmChangeOf returns the change record of a CRM record, made on first use.
func (p *Portal) crmChangeOf(et, id int) *crmChange {
	byID := p.mut.crm[et]
	if byID == nil {
		byID = map[int]*crmChange{}
		p.mut.crm[et] = byID
	}
	ch := byID[id]
	if ch == nil {
		ch = &crmChange{}
		byID[id] = ch
	}
	return ch
}

// Edit changes a record as a person editing it on the portal would: a visible field (a
// company's or deal's title, a contact's name, a task's title, a user's position, a group's
// name) and the record's modification time (updatedTime, changedDate and activityDate for a
// task, TIMESTAMP_X for a user, DATE_UPDATE and DATE_ACTIVITY for a group). Entities:
// DeleteCompanies, DeleteContacts, DeleteDeals, DeleteTasks, Users, Groups, and SmartItems(t)
// for the items of a smart process.
func (p *Portal) Edit(entity string, id int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.edit(entity, id)
}

func (p *Portal) edit(entity string, id int) error {
	et, ok := crmTypeOf(entity)
	if smart, isSmart := strings.CutPrefix(entity, "smart_"); isSmart {
		et, _ = strconv.Atoi(smart)
		_, ok = p.smartType(et)
	}
	if ok {
		if indexOf(p.crmIDs(et), id) < 0 {
			return fmt.Errorf("bitrixfake: no %s %d to edit", entity, id)
		}
		ch := p.crmChangeOf(et, id)
		ch.updated, ch.updatedBy = p.stamp(), p.actor()
		ch.edits++
		return nil
	}
	switch entity {
	case Users, Groups:
		return p.editSocial(entity, id)
	case DeleteTasks:
	default:
		return fmt.Errorf("bitrixfake: cannot edit %s", entity)
	}
	t, ok := p.tasks.byID[id]
	if !ok {
		return fmt.Errorf("bitrixfake: no task %d to edit", id)
	}
	at := p.stamp()
	t.changed, t.activity = at, at
	t.edits++
	return nil
}

// Add creates a record as a person would on the portal, with an id above every id the entity
// ever had, dated now; it returns the id. Entities: DeleteCompanies, DeleteContacts,
// DeleteDeals, DeleteTasks. A new task is visible, waiting, without checklist and comments (a
// task in the new card has its chat with the message of its creation).
func (p *Portal) Add(entity string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.add(entity)
}

func (p *Portal) add(entity string) (int, error) {
	if et, ok := crmTypeOf(entity); ok {
		ids := p.crmIDs(et)
		id := p.mut.crmMax[et]
		if n := len(ids); n > 0 {
			id = max(id, ids[n-1])
		}
		if et == etCompany {
			id = max(id, p.deletedCompany)
		}
		gen := map[int][]int{etCompany: p.genCompanies, etContact: p.genContacts, etDeal: p.genDeals}[et]
		if n := len(gen); n > 0 {
			id = max(id, gen[n-1])
		}
		id++
		p.mut.crmMax[et] = id
		at := p.stamp()
		ch := p.crmChangeOf(et, id)
		*ch = crmChange{created: at, updated: at, activity: at, updatedBy: p.actor(), activityBy: p.actor()}
		switch et {
		case etCompany:
			p.companies = append(p.companies, id)
		case etContact:
			p.contacts = append(p.contacts, id)
		case etDeal:
			p.deals = append(p.deals, id)
		}
		return id, nil
	}
	if entity != DeleteTasks {
		return 0, fmt.Errorf("bitrixfake: cannot add %s", entity)
	}
	id := max(p.tasks.maxID, 0)
	if n := len(p.tasks.ids); n > 0 {
		id = max(id, p.tasks.ids[n-1])
	}
	id++
	p.tasks.maxID = id
	at := p.stamp()
	t := p.genTask(id)
	t.hidden, t.chatRefused = false, false
	t.created, t.changed, t.activity = at, at, at
	t.status, t.checklist, t.comments = 2, nil, 0
	if t.chat {
		t.comments = 1 // the system message of the task's creation
	}
	p.tasks.byID[id] = t
	p.tasks.ids = append(p.tasks.ids, id)
	p.tasks.visible = append(p.tasks.visible, id)
	return id, nil
}

// editSocial edits a user (its position and TIMESTAMP_X, in the portal's own format as user.get
// renders it) or a workgroup (its name, DATE_UPDATE and DATE_ACTIVITY), through the overrides
// SetUserField and SetGroupField make.
func (p *Portal) editSocial(entity string, id int) error {
	at := p.stamp()
	n := p.mut.edits[entity][id] + 1
	if entity == Users {
		if !p.userExists(id) {
			return fmt.Errorf("bitrixfake: no user %d to edit", id)
		}
		p.mut.edits[entity][id] = n
		position, _ := p.userRow(id).get("WORK_POSITION")
		if p.userOverrides[id] == nil {
			p.userOverrides[id] = map[string]any{}
		}
		p.userOverrides[id]["WORK_POSITION"] = strval(position) + editMark(n)
		p.userOverrides[id]["TIMESTAMP_X"] = at.In(p.opts.Location).Format("02.01.2006 15:04:05")
		return nil
	}
	if _, found := slices.BinarySearch(p.groups, id); !found {
		return fmt.Errorf("bitrixfake: no group %d to edit", id)
	}
	p.mut.edits[entity][id] = n
	name, _ := p.groupRow(id, 0).get("NAME")
	if p.groupOverrides[id] == nil {
		p.groupOverrides[id] = map[string]any{}
	}
	p.groupOverrides[id]["NAME"] = strval(name) + editMark(n)
	p.groupOverrides[id]["DATE_UPDATE"] = p.isoDate(at)
	p.groupOverrides[id]["DATE_ACTIVITY"] = p.isoDate(at)
	return nil
}
