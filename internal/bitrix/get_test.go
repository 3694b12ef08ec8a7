package bitrix_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

func TestGetChainsIDPagesInBatches(t *testing.T) {
	t.Parallel()
	const users = 6_010 // not a multiple of 50: the listing ends on a short page, not an empty one
	v := newEnv(t, bitrixfake.Options{Users: users, Seed: 1})
	st, err := v.engine().Get(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(bitrix.Users).Rows != users || st.Of(bitrix.Users).Inserted != users || !st.Complete || st.Resumed {
		t.Errorf("stats = %+v, want %d rows inserted in one complete pass", st, users)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND status = 'NEW'`); n != users {
		t.Errorf("%d NEW users stored, want %d", n, users)
	}
	// One batch that reads the first page with the count and the highest ID (its answer shows
	// the portal's clock: no probe of its own), then the ID ranges' pages 50 to a request: 2,500
	// rows per request however the ranges end, since a request carries pages of several ranges.
	want := 1 + (users-rest.PageSize+2_499)/2_500
	if got := v.portal.Stats().Requests; got != want {
		t.Errorf("%d HTTP requests, want %d", got, want)
	}
	if got := v.source.Stats().QueryLimit; got != 0 {
		t.Errorf("%d QUERY_LIMIT_EXCEEDED answers", got)
	}

	// Every page is in the page log once, with the pass's total; together they hold every row.
	rows, err := v.pool.Query(v.ctx, `SELECT cursor, next_cursor, count, total FROM bitrix_page_log WHERE entity = 'users' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	sum, pages, seen := 0, 0, map[string]bool{}
	for rows.Next() {
		var cursor, next string
		var count int
		var total *int64
		if err := rows.Scan(&cursor, &next, &count, &total); err != nil {
			t.Fatal(err)
		}
		if seen[cursor] {
			t.Errorf("page after %s logged twice", cursor)
		}
		if total == nil || *total != users {
			t.Errorf("page %d total = %v, want %d", pages, total, users)
		}
		seen[cursor], sum, pages = true, sum+count, pages+1
	}
	if rows.Err() != nil || sum != users || pages < users/rest.PageSize {
		t.Errorf("page log: %d pages, %d rows (%v), want %d rows", pages, sum, rows.Err(), users)
	}
	inv := v.inventory(bitrix.Users)
	if inv.SourceTotal == nil || *inv.SourceTotal != users || !inv.Complete || inv.PassRows != users || inv.Pass != 1 {
		t.Errorf("inventory = %+v", inv)
	}
	if got := v.metric(`records_extracted_total{entity=users}`); got != users {
		t.Errorf("records_extracted_total{entity=users} = %v", got)
	}
	if !strings.Contains(v.log.String(), "msg=progress entity=users phase=get done=") ||
		!strings.Contains(v.log.String(), "eta_s=") || !strings.Contains(v.log.String(), "rate_per_s=") {
		t.Errorf("no progress lines with done/total, rate and ETA in the log")
	}
}

// cancelOnCall stops a get during its nth request for pages, as a crash or a SIGTERM would: the
// pages of that request are never stored.
type cancelOnCall struct {
	engine.Source
	n      int
	cancel context.CancelFunc
	calls  int
}

func (c *cancelOnCall) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	if c.calls++; c.calls == c.n {
		c.cancel()
		return nil, context.Cause(ctx)
	}
	return c.Source.ScanSegments(ctx, s, segs)
}

func TestGetResumesEveryRangeWhereItStopped(t *testing.T) {
	t.Parallel()
	const users = 6_010
	v := newEnv(t, bitrixfake.Options{Users: users, Seed: 2})
	ctx, cancel := context.WithCancel(v.ctx)
	defer cancel()
	e := v.engine()
	e.Concurrency = 1 // one request at a time: the first is stored, the second is lost
	e.Source = &cancelOnCall{Source: v.source, n: 2, cancel: cancel}
	st, err := e.Get(ctx, bitrix.Users)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	stored := st.Of(bitrix.Users).Rows
	if stored <= rest.PageSize || stored >= users {
		t.Fatalf("interrupted get stored %d users, want the first page and one request's worth", stored)
	}
	inv := v.inventory(bitrix.Users)
	if inv.Complete || inv.PassRows != int64(stored) {
		t.Fatalf("inventory after interruption = %+v, want %d rows of an incomplete pass", inv, stored)
	}

	before := v.portal.Stats().Requests
	st, err = v.engine().Get(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || st.Pass != inv.Pass || !st.Complete {
		t.Errorf("rerun = %+v, want it to resume and complete pass %d", st, inv.Pass)
	}
	if got := st.Of(bitrix.Users); got.Rows != users-stored || got.Inserted != users-stored || got.Unchanged != 0 {
		t.Errorf("rerun read %d users (%d new, %d unchanged), want only the %d not stored yet", got.Rows, got.Inserted, got.Unchanged, users-stored)
	}
	// Resuming listed nothing again: the clock probe, then full requests for what was left.
	if calls := v.portal.Stats().Requests - before; calls > 1+(users-stored+2_499)/2_500+1 {
		t.Errorf("rerun made %d requests for %d users", calls, users-stored)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users'`); n != users {
		t.Errorf("%d users stored, want %d", n, users)
	}
	if n := v.count(`SELECT count(*) FROM (SELECT cursor FROM bitrix_page_log WHERE entity = 'users' GROUP BY pass, cursor HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d pages logged twice in one pass", n)
	}
	if inv := v.inventory(bitrix.Users); !inv.Complete || inv.PassRows != users || *inv.SourceTotal != users {
		t.Errorf("inventory after resume = %+v", inv)
	}
}

func TestGetReadsChildrenWithTheirParents(t *testing.T) {
	t.Parallel()
	const groups = 400
	v := newEnv(t, bitrixfake.Options{Users: 500, Groups: groups, Seed: 2})
	st, err := v.engine().Get(v.ctx, bitrix.Groups)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(bitrix.Groups).Rows != groups || !st.Complete {
		t.Errorf("get = %+v, want %d groups in a complete pass", st, groups)
	}
	var members int
	for _, id := range v.portal.GroupIDs() {
		members += len(v.portal.ActiveMembers(id))
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'group_members'`); n != members || st.Of(bitrix.GroupMembers).Inserted != members {
		t.Errorf("%d memberships stored, want %d (every active member of every group)", n, members)
	}
}

func TestRegetLeavesUnchangedRecordsAndReopensChangedOnes(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 120, Seed: 3})
	e := v.engine()
	v.migrateUsers(e)
	if !v.inventory(bitrix.Users).Verified {
		t.Fatal("users not verified after a clean migration")
	}
	ids := v.portal.UserIDs()
	changed, online := strconv.Itoa(ids[4]), strconv.Itoa(ids[6])
	v.portal.SetUserField(ids[4], "WORK_POSITION", "Главный бухгалтер")
	v.portal.SetUserField(ids[6], "IS_ONLINE", "Y") // presence is not a change of the record
	v.portal.SetUserField(ids[6], "LAST_ACTIVITY_DATE", "2026-03-01 10:00:00")
	historyBefore := v.count(`SELECT count(*) FROM status_history WHERE machine = 'bitrix'`)
	untouched := v.record(bitrix.Users, online)

	st, err := e.Get(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	if st.Resumed || st.Pass != 2 || st.Of(bitrix.Users).Changed != 1 || st.Of(bitrix.Users).Unchanged != 119 || st.Of(bitrix.Users).Inserted != 0 {
		t.Errorf("re-get = %+v, want a new pass with 1 changed and 119 unchanged", st)
	}
	r := v.record(bitrix.Users, changed)
	if r.Status != engine.New || !strings.Contains(string(r.Payload), "Главный бухгалтер") {
		t.Errorf("changed user: status %s, payload %s; want NEW with the new payload", r.Status, r.Payload)
	}
	hist, err := engine.Machine.History(v.ctx, v.pool, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1]; last.From != engine.ImportOK || last.To != engine.New || last.Reason != "changed on the source" {
		t.Errorf("last move of the changed user = %+v, want IMPORT_OK -> NEW, changed on the source", last)
	}
	if got := v.record(bitrix.Users, online); got.Status != engine.ImportOK || string(got.Payload) != string(untouched.Payload) {
		t.Errorf("user with only presence changes: status %s, payload changed %v; want untouched", got.Status, string(got.Payload) != string(untouched.Payload))
	}
	if n := v.count(`SELECT count(*) FROM status_history WHERE machine = 'bitrix'`); n != historyBefore+1 {
		t.Errorf("%d history rows added, want 1 (the changed user only)", n-historyBefore)
	}
	if v.inventory(bitrix.Users).Verified {
		t.Error("users still verified after a record changed")
	}

	// The next set sends the changed user again under its key: the target updates it in place.
	before := v.target.Stats()
	if _, err := e.Set(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	after := v.target.Stats()
	if after.Items-before.Items != 1 || after.Updated-before.Updated != 1 || after.Created != before.Created || after.Duplicates != 0 {
		t.Errorf("target after re-set: %+v (before %+v), want one item, updated in place", after, before)
	}
	rec, _ := v.target.Lookup(bitrix.Users, "source:users:"+changed)
	if !strings.Contains(string(rec.Payload), "Главный бухгалтер") {
		t.Errorf("target payload not updated: %s", rec.Payload)
	}
}

func TestGetTestLimitPullsDependenciesBeyondIt(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 400, Groups: 30, Seed: 4})
	e := v.engine()
	e.TestLimit = 10
	st, err := e.Get(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(bitrix.Users).Rows != 10 || !st.Complete {
		t.Errorf("limited users get = %+v, want 10 rows and a complete pass", st)
	}
	firstTen := v.portal.UserIDs()[:10]
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND source_id::int <= $1`, firstTen[9]); n != 10 {
		t.Errorf("%d of the first ten users stored", n)
	}

	e.TestLimit = 3
	st, err = e.Get(v.ctx, bitrix.Groups)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(bitrix.Groups).Rows != 3 {
		t.Errorf("limited groups get read %d groups, want 3", st.Of(bitrix.Groups).Rows)
	}
	// Their members all came along, and every user they refer to is stored.
	groups := v.portal.GroupIDs()[:3]
	var members int
	for _, g := range groups {
		members += len(v.portal.ActiveMembers(g))
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'group_members'`); n != members {
		t.Errorf("%d memberships stored, want %d (all of the 3 groups')", n, members)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records m WHERE m.entity = 'group_members' AND NOT EXISTS
(SELECT 1 FROM bitrix_records u WHERE u.entity = 'users' AND u.source_id = split_part(m.source_id, ':', 2))`); n != 0 {
		t.Errorf("%d memberships refer to users that were not pulled in", n)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records g WHERE g.entity = 'groups' AND NOT EXISTS
(SELECT 1 FROM bitrix_records u WHERE u.entity = 'users' AND u.source_id = g.payload->>'OWNER_ID')`); n != 0 {
		t.Errorf("%d owners were not pulled in", n)
	}
	if st.Of(bitrix.Users).Inserted == 0 || v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users'`) != 10+st.Of(bitrix.Users).Inserted {
		t.Errorf("pulled %d users; stored users should be 10 plus them", st.Of(bitrix.Users).Inserted)
	}
}

func (v *env) inventory(entity string) engine.Inventory {
	v.t.Helper()
	rep, err := v.engine().Report(v.ctx)
	if err != nil {
		v.t.Fatal(err)
	}
	for _, es := range rep.Entities {
		if es.Entity == entity && es.Inventory != nil {
			return *es.Inventory
		}
	}
	v.t.Fatalf("no inventory for %s", entity)
	return engine.Inventory{}
}

// stopListing stops an offset get after a number of pages were stored, as a crash would.
type stopListing struct {
	engine.Source
	pages  int
	cancel context.CancelFunc
}

func (s *stopListing) ListByStart(ctx context.Context, l rest.List, start int, fn func(rest.Page) error) error {
	n := 0
	return s.Source.ListByStart(ctx, l, start, func(p rest.Page) error {
		if err := fn(p); err != nil {
			return err
		}
		if n++; n == s.pages {
			s.cancel()
		}
		return nil
	})
}

// An entity listed by offset (here users, through a registry of its own) is read whole, and an
// interrupted get resumes at the offset of the first page it did not store.
func TestOffsetPagesResumeAtTheNextOffset(t *testing.T) {
	t.Parallel()
	const users = 730
	v := newEnv(t, bitrixfake.Options{Users: users, Seed: 12})
	reg, err := engine.NewRegistry(&engine.Entity{Name: "people", Batch: 50,
		Lister: &engine.OffsetPages{List: rest.List{Method: "user.get", Params: map[string]any{"ADMIN_MODE": true, "sort": "ID", "order": "ASC"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(v.ctx)
	defer cancel()
	e := v.engine()
	e.Registry = reg
	e.Source = &stopListing{Source: v.source, pages: 4, cancel: cancel}
	if _, err := e.Get(ctx, "people"); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	inventory := func() engine.Inventory {
		e := v.engine()
		e.Registry = reg
		rep, err := e.Report(v.ctx)
		if err != nil || len(rep.Entities) != 1 || rep.Entities[0].Inventory == nil {
			t.Fatalf("report = %+v, %v", rep, err)
		}
		return *rep.Entities[0].Inventory
	}
	inv := inventory()
	if inv.Complete || inv.PassRows != 250 || inv.Cursor != "250" {
		t.Fatalf("inventory after interruption = %+v, want 250 rows (the first page and 4 more), cursor 250", inv)
	}
	e = v.engine()
	e.Registry = reg
	st, err := e.Get(v.ctx, "people")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || !st.Complete || st.Of("people").Inserted != users-250 {
		t.Errorf("rerun = %+v, want the %d users after offset 250", st, users-250)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people'`); n != users {
		t.Errorf("%d stored, want %d", n, users)
	}
	// The next get is a new pass that finds nothing changed.
	st, err = e.Get(v.ctx, "people")
	if err != nil || st.Resumed || st.Of("people").Unchanged != users {
		t.Errorf("third get = %+v, %v; want a new pass with %d unchanged", st, err, users)
	}
}
