package bitrixfake

import (
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// issuePortal is the portal of issue 35's measurement: about 9,000 records.
func issuePortal(now func() time.Time) Options {
	return Options{Users: 30, Seed: 35, Companies: 1000, Contacts: 2500, Deals: 4000, Tasks: 1500, Now: now}
}

// Churn is deterministic by seed, makes issue 35's mix at 1%, and differs with the seed.
func TestChurnIsDeterministicInIssueMix(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	a, b, c := New(issuePortal(clock.Now)), New(issuePortal(clock.Now)), New(issuePortal(clock.Now))
	ra, rb, rc := a.Churn(7, 0.01), b.Churn(7, 0.01), c.Churn(8, 0.01)
	ra.At, rb.At = time.Time{}, time.Time{}
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("same seed, different reports:\n%v\n%v", ra, rb)
	}
	if reflect.DeepEqual(ra.Changes, rc.Changes) {
		t.Error("seeds 7 and 8 made the same changes")
	}
	count := func(r ChurnReport, pick func(*Changes) []int, entities ...string) int {
		n := 0
		for _, e := range entities {
			n += len(pick(r.Changes[e]))
		}
		return n
	}
	records := []string{DeleteCompanies, DeleteContacts, DeleteDeals, DeleteTasks}
	edits := count(ra, func(c *Changes) []int { return c.Edited }, records...)
	adds := count(ra, func(c *Changes) []int { return c.Added }, records...)
	dels := count(ra, func(c *Changes) []int { return c.Deleted }, records...)
	comments := count(ra, func(c *Changes) []int { return append(slices.Clone(c.Added), c.Deleted...) }, DeleteTaskComments, TimelineComments)
	// 8,993 records (visible tasks only, one company deleted at generation): 90 edits, 10
	// additions, 14 comments, 7 deletions.
	if edits != 90 || adds != 10 || comments != 14 || dels != 7 {
		t.Errorf("mix: %d edits, %d additions, %d comments, %d deletions; want 90, 10, 14, 7\n%v", edits, adds, comments, dels, ra)
	}
	for _, e := range records {
		if len(ra.Changes[e].Edited) == 0 {
			t.Errorf("no %s edited: %v", e, ra)
		}
	}
	if n := len(ra.Changes[DeleteTaskComments].Added) + len(ra.Changes[TimelineComments].Added); n == 0 || n == comments {
		t.Errorf("comments: %d added of %d, want both additions and deletions", n, comments)
	}
}

// Every change Churn reports is visible through the portal's methods, and only those: a filter on
// each modification field after the last read finds exactly the edited and added records.
func TestChurnReportIsExactlyWhatChanged(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, issuePortal(clock.Now))
	before := map[string][]int{}
	for _, e := range []string{DeleteCompanies, DeleteContacts, DeleteDeals} {
		before[e] = p.PortalIDs(e)
	}
	status, out := call(t, srv, p, "crm.item.list", `{"entityTypeId": 4, "select": ["id"], "start": -1}`)
	if status != 200 {
		t.Fatalf("read: %d %v", status, out)
	}
	read := out["time"].(map[string]any)["date_start"].(string)
	rep := p.Churn(11, 0.01)

	for e, et := range map[string]int{DeleteCompanies: 4, DeleteContacts: 3, DeleteDeals: 2} {
		c := rep.Changes[e]
		want := append(slices.Clone(c.Edited), c.Added...)
		slices.Sort(want)
		if got := allCRM(t, srv, p, et, `{">updatedTime": "`+read+`"}`); !reflect.DeepEqual(got, want) {
			t.Errorf("%s >updatedTime: %v, want %v", e, got, want)
		}
		active := slices.Clone(c.Added)
		for cid, o := range rep.Changes[TimelineComments].Owners {
			if o.Entity == e && slices.Contains(rep.Changes[TimelineComments].Added, cid) {
				active = append(active, o.ID)
			}
		}
		slices.Sort(active)
		active = slices.Compact(active)
		if got := allCRM(t, srv, p, et, `{">lastActivityTime": "`+read+`"}`); !reflect.DeepEqual(got, active) {
			t.Errorf("%s >lastActivityTime: %v, want %v", e, got, active)
		}
		now := p.PortalIDs(e)
		for _, id := range c.Deleted {
			if !slices.Contains(before[e], id) || slices.Contains(now, id) {
				t.Errorf("%s %d reported deleted: before %v, now %v", e, id, slices.Contains(before[e], id), slices.Contains(now, id))
			}
		}
		if len(now) != len(before[e])+len(c.Added)-len(c.Deleted) {
			t.Errorf("%s: %d now, %d before, %d added, %d deleted", e, len(now), len(before[e]), len(c.Added), len(c.Deleted))
		}
	}
	tc := rep.Changes[TimelineComments]
	for _, cid := range tc.Added {
		o := tc.Owners[cid]
		if !slices.Contains(p.TimelineCommentIDs(o.Entity, o.ID), cid) {
			t.Errorf("timeline comment %d of %v is not listed", cid, o)
		}
	}
	for _, cid := range tc.Deleted {
		o := tc.Owners[cid]
		if slices.Contains(p.TimelineCommentIDs(o.Entity, o.ID), cid) {
			t.Errorf("deleted timeline comment %d of %v is still listed", cid, o)
		}
	}

	tasks := rep.Changes[DeleteTasks]
	changed := append(slices.Clone(tasks.Edited), tasks.Added...)
	slices.Sort(changed)
	if got := allTasks(t, srv, p, `{">CHANGED_DATE": "`+read+`"}`); !reflect.DeepEqual(got, changed) {
		t.Errorf("tasks >CHANGED_DATE: %v, want %v", got, changed)
	}
	active := slices.Clone(changed)
	for _, cid := range rep.Changes[DeleteTaskComments].Added {
		active = append(active, rep.Changes[DeleteTaskComments].Owners[cid].ID)
	}
	slices.Sort(active)
	active = slices.Compact(active)
	if got := allTasks(t, srv, p, `{">ACTIVITY_DATE": "`+read+`"}`); !reflect.DeepEqual(got, active) {
		t.Errorf("tasks >ACTIVITY_DATE: %v, want %v", got, active)
	}
	infos := map[int]TaskInfo{}
	for _, ti := range p.TaskInfos() {
		infos[ti.ID] = ti
	}
	for _, id := range tasks.Deleted {
		if _, ok := infos[id]; ok {
			t.Errorf("task %d reported deleted is still there", id)
		}
	}
}

// allCRM lists every id of an entity type matching a filter, page by page with start.
func allCRM(t *testing.T, srv *httptest.Server, p *Portal, et int, filter string) []int {
	t.Helper()
	var out []int
	for start := 0; ; start += 50 {
		items, raw := crmItems(t, srv, p, `{"entityTypeId": `+strconv.Itoa(et)+`, "select": ["id"], "filter": `+filter+
			`, "start": `+strconv.Itoa(start)+`}`)
		out = append(out, idsOf(items, "id")...)
		if raw["next"] == nil {
			return out
		}
	}
}

// allTasks lists every task id matching a filter, ascending.
func allTasks(t *testing.T, srv *httptest.Server, p *Portal, filter string) []int {
	t.Helper()
	var out []int
	for start := 0; ; start += 50 {
		status, raw := call(t, srv, p, "tasks.task.list", `{"select": ["ID"], "order": {"ID": "asc"}, "filter": `+filter+
			`, "start": `+strconv.Itoa(start)+`}`)
		if status != 200 {
			t.Fatalf("tasks.task.list %s: %d %v", filter, status, raw)
		}
		var rows []map[string]any
		for _, r := range raw["result"].(map[string]any)["tasks"].([]any) {
			rows = append(rows, r.(map[string]any))
		}
		out = append(out, idsOf(rows, "id")...)
		if raw["next"] == nil {
			return out
		}
	}
}

// Changes are safe while the portal serves: run with -race.
func TestChurnWhileServing(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Seed: 12, Companies: 100, Contacts: 100, Deals: 200, Tasks: 200})
	done := make(chan struct{})
	errs := make(chan string, 4)
	bodies := [][2]string{
		{"crm.item.list", `{"entityTypeId": 2, "select": ["*"], "filter": {">updatedTime": "2020-01-01"}, "start": 0}`},
		{"tasks.task.list", `{"select": ["ID", "ACTIVITY_DATE", "COMMENTS_COUNT"], "start": 0}`},
		{"crm.deal.list", `{"filter": {">DATE_MODIFY": "2020-01-01"}}`},
		{"crm.timeline.comment.list", `{"filter": {"ENTITY_ID": 8, "ENTITY_TYPE": "deal"}}`},
	}
	for _, b := range bodies {
		go func() {
			for {
				select {
				case <-done:
					errs <- ""
					return
				default:
				}
				if status, out := call(t, srv, p, b[0], b[1]); status != 200 && !(b[0] == "crm.timeline.comment.list" && status == 400) {
					errs <- b[0] + ": " + strconv.Itoa(status) + " " + fmtAny(out)
					return
				}
			}
		}()
	}
	for seed := range int64(5) {
		rep := p.Churn(seed, 0.02)
		if rep.Total() == 0 {
			t.Errorf("churn %d changed nothing", seed)
		}
		for _, id := range p.DealIDs()[:3] {
			if err := p.Edit(DeleteDeals, id); err != nil {
				t.Error(err)
			}
		}
	}
	close(done)
	for range bodies {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

func fmtAny(v any) string { return fmt.Sprint(v) }
