package engine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

const (
	people      = enginetest.People
	teams       = enginetest.Teams
	teamMembers = enginetest.TeamMembers
)

// newWorld is a world on the synthetic registry with the portal given.
func newWorld(t *testing.T, portal bitrixfake.Options) *enginetest.World {
	t.Helper()
	return enginetest.New(t, enginetest.Options{Portal: portal})
}

func TestGetChainsIDPagesInBatches(t *testing.T) {
	t.Parallel()
	const users = 6_010 // not a multiple of 50: the listing ends on a short page, not an empty one
	w := newWorld(t, bitrixfake.Options{Users: users, Seed: 1})
	st, err := w.Engine().Get(w.Ctx, people)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(people).Rows != users || st.Of(people).Inserted != users || !st.Complete || st.Resumed {
		t.Errorf("stats = %+v, want %d rows inserted in one complete pass", st, users)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people' AND status = 'NEW'`); n != users {
		t.Errorf("%d NEW people stored, want %d", n, users)
	}
	// One batch that reads the first page with the count and the highest ID (its answer shows
	// the portal's clock: no probe of its own), then the ID ranges' pages 50 to a request: 2,500
	// rows per request however the ranges end, since a request carries pages of several ranges.
	want := 1 + (users-rest.PageSize+2_499)/2_500
	if got := w.Portal.Stats().Requests; got != want {
		t.Errorf("%d HTTP requests, want %d", got, want)
	}
	if got := w.Source.Stats().QueryLimit; got != 0 {
		t.Errorf("%d QUERY_LIMIT_EXCEEDED answers", got)
	}

	// Every page is in the page log once, with the pass's total; together they hold every row.
	rows, err := w.Pool.Query(w.Ctx, `SELECT cursor, next_cursor, count, total FROM bitrix_page_log WHERE entity = 'people' ORDER BY id`)
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
	inv := w.Inventory(people)
	if inv.SourceTotal == nil || *inv.SourceTotal != users || !inv.Complete || inv.PassRows != users || inv.Pass != 1 {
		t.Errorf("inventory = %+v", inv)
	}
	if got := w.Metric(`records_extracted_total{entity=people}`); got != users {
		t.Errorf("records_extracted_total{entity=people} = %v", got)
	}
	if !strings.Contains(w.Log.String(), "msg=progress entity=people phase=get done=") ||
		!strings.Contains(w.Log.String(), "eta_s=") || !strings.Contains(w.Log.String(), "rate_per_s=") {
		t.Errorf("no progress lines with done/total, rate and ETA in the log")
	}
}

func TestGetResumesEveryRangeWhereItStopped(t *testing.T) {
	t.Parallel()
	const users = 6_010
	w := newWorld(t, bitrixfake.Options{Users: users, Seed: 2})
	ctx, cancel := context.WithCancel(w.Ctx)
	defer cancel()
	e := w.Engine(func(e *engine.Config) {
		e.Concurrency = 1 // one request at a time: the first is stored, the second is lost
		e.Source = &enginetest.CancelOnCall{Source: w.Source, N: 2, Cancel: cancel}
	})
	st, err := e.Get(ctx, people)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	stored := st.Of(people).Rows
	if stored <= rest.PageSize || stored >= users {
		t.Fatalf("interrupted get stored %d people, want the first page and one request's worth", stored)
	}
	inv := w.Inventory(people)
	if inv.Complete || inv.PassRows != int64(stored) {
		t.Fatalf("inventory after interruption = %+v, want %d rows of an incomplete pass", inv, stored)
	}

	before := w.Portal.Stats().Requests
	st, err = w.Engine().Get(w.Ctx, people)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || st.Pass != inv.Pass || !st.Complete {
		t.Errorf("rerun = %+v, want it to resume and complete pass %d", st, inv.Pass)
	}
	if got := st.Of(people); got.Rows != users-stored || got.Inserted != users-stored || got.Unchanged != 0 {
		t.Errorf("rerun read %d people (%d new, %d unchanged), want only the %d not stored yet", got.Rows, got.Inserted, got.Unchanged, users-stored)
	}
	// Resuming listed nothing again: the clock probe, then full requests for what was left.
	if calls := w.Portal.Stats().Requests - before; calls > 1+(users-stored+2_499)/2_500+1 {
		t.Errorf("rerun made %d requests for %d people", calls, users-stored)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people'`); n != users {
		t.Errorf("%d people stored, want %d", n, users)
	}
	if n := w.Count(`SELECT count(*) FROM (SELECT cursor FROM bitrix_page_log WHERE entity = 'people' GROUP BY pass, cursor HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d pages logged twice in one pass", n)
	}
	if inv := w.Inventory(people); !inv.Complete || inv.PassRows != users || *inv.SourceTotal != users {
		t.Errorf("inventory after resume = %+v", inv)
	}
}

func TestGetReadsChildrenWithTheirParents(t *testing.T) {
	t.Parallel()
	const groups = 400
	w := newWorld(t, bitrixfake.Options{Users: 500, Groups: groups, Seed: 2})
	st, err := w.Engine().Get(w.Ctx, teams)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(teams).Rows != groups || !st.Complete {
		t.Errorf("get = %+v, want %d teams in a complete pass", st, groups)
	}
	var members int
	for _, id := range w.Portal.GroupIDs() {
		members += len(w.Portal.ActiveMembers(id))
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'team_members'`); n != members || st.Of(teamMembers).Inserted != members {
		t.Errorf("%d memberships stored, want %d (every active member of every team)", n, members)
	}
}

func TestRegetLeavesUnchangedRecordsAndReopensChangedOnes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 120, Seed: 3})
	e := w.Engine()
	w.Migrate(e, people)
	if !w.Inventory(people).Verified {
		t.Fatal("people not verified after a clean migration")
	}
	ids := w.Portal.UserIDs()
	changed, online := strconv.Itoa(ids[4]), strconv.Itoa(ids[6])
	w.Portal.SetUserField(ids[4], "WORK_POSITION", "Главный бухгалтер")
	w.Portal.SetUserField(ids[6], "IS_ONLINE", "Y") // presence is not a change of the record
	w.Portal.SetUserField(ids[6], "LAST_ACTIVITY_DATE", "2026-03-01 10:00:00")
	historyBefore := w.Count(`SELECT count(*) FROM status_history WHERE machine = 'bitrix'`)
	untouched := w.Record(people, online)

	st, err := e.Get(w.Ctx, people)
	if err != nil {
		t.Fatal(err)
	}
	if st.Resumed || st.Pass != 2 || st.Of(people).Changed != 1 || st.Of(people).Unchanged != 119 || st.Of(people).Inserted != 0 {
		t.Errorf("re-get = %+v, want a new pass with 1 changed and 119 unchanged", st)
	}
	r := w.Record(people, changed)
	if r.Status != engine.StatusNew || !strings.Contains(string(r.Payload), "Главный бухгалтер") {
		t.Errorf("changed person: status %s, payload %s; want NEW with the new payload", r.Status, r.Payload)
	}
	hist, err := engine.Machine.History(w.Ctx, w.Pool, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1]; last.From != engine.ImportOK || last.To != engine.StatusNew || last.Reason != "changed on the source" {
		t.Errorf("last move of the changed person = %+v, want IMPORT_OK -> NEW, changed on the source", last)
	}
	if got := w.Record(people, online); got.Status != engine.ImportOK || string(got.Payload) != string(untouched.Payload) {
		t.Errorf("person with only presence changes: status %s, payload changed %v; want untouched", got.Status, string(got.Payload) != string(untouched.Payload))
	}
	if n := w.Count(`SELECT count(*) FROM status_history WHERE machine = 'bitrix'`); n != historyBefore+1 {
		t.Errorf("%d history rows added, want 1 (the changed person only)", n-historyBefore)
	}
	if w.Inventory(people).Verified {
		t.Error("people still verified after a record changed")
	}

	// The next set sends the changed person again under its key: the target updates it in place.
	before := w.Target.Stats()
	if _, err := e.Set(w.Ctx, people); err != nil {
		t.Fatal(err)
	}
	after := w.Target.Stats()
	if after.Items-before.Items != 1 || after.Updated-before.Updated != 1 || after.Created != before.Created || after.Duplicates != 0 {
		t.Errorf("target after re-set: %+v (before %+v), want one item, updated in place", after, before)
	}
	rec, _ := w.Target.Lookup(people, "source:people:"+changed)
	if !strings.Contains(string(rec.Payload), "Главный бухгалтер") {
		t.Errorf("target payload not updated: %s", rec.Payload)
	}
}

func TestGetTestLimitPullsDependenciesBeyondIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 400, Groups: 30, Seed: 4})
	e := w.Engine(func(e *engine.Config) { e.TestLimit = 10 })
	st, err := e.Get(w.Ctx, people)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(people).Rows != 10 || !st.Complete {
		t.Errorf("limited people get = %+v, want 10 rows and a complete pass", st)
	}
	firstTen := w.Portal.UserIDs()[:10]
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people' AND source_id::int <= $1`, firstTen[9]); n != 10 {
		t.Errorf("%d of the first ten people stored", n)
	}

	e = w.Engine(func(e *engine.Config) { e.TestLimit = 3 })
	st, err = e.Get(w.Ctx, teams)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(teams).Rows != 3 {
		t.Errorf("limited teams get read %d teams, want 3", st.Of(teams).Rows)
	}
	// Their members all came along, and every person they refer to is stored.
	groups := w.Portal.GroupIDs()[:3]
	var members int
	for _, g := range groups {
		members += len(w.Portal.ActiveMembers(g))
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'team_members'`); n != members {
		t.Errorf("%d memberships stored, want %d (all of the 3 teams')", n, members)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records m WHERE m.entity = 'team_members' AND NOT EXISTS
(SELECT 1 FROM bitrix_records u WHERE u.entity = 'people' AND u.source_id = split_part(m.source_id, ':', 2))`); n != 0 {
		t.Errorf("%d memberships refer to people that were not pulled in", n)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records g WHERE g.entity = 'teams' AND NOT EXISTS
(SELECT 1 FROM bitrix_records u WHERE u.entity = 'people' AND u.source_id = g.payload->>'OWNER_ID')`); n != 0 {
		t.Errorf("%d owners were not pulled in", n)
	}
	if st.Of(people).Inserted == 0 || w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people'`) != 10+st.Of(people).Inserted {
		t.Errorf("pulled %d people; stored people should be 10 plus them", st.Of(people).Inserted)
	}
}

func TestGetKeepsDatesAsReceivedWithUTCAndOffset(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 60, Seed: 5})
	id := strconv.Itoa(w.Portal.UserIDs()[2])
	w.Portal.SetUserField(w.Portal.UserIDs()[2], "DATE_REGISTER", "2024-07-15T00:00:00+02:00")
	w.Portal.SetUserField(w.Portal.UserIDs()[2], "TIMESTAMP_X", "24.08.2023 13:19:39")
	if _, err := w.Engine().Get(w.Ctx, people); err != nil {
		t.Fatal(err)
	}
	r := w.Record(people, id)
	reg, ts := r.Dates["DATE_REGISTER"], r.Dates["TIMESTAMP_X"]
	if reg.Raw != "2024-07-15T00:00:00+02:00" || !reg.UTC.Equal(time.Date(2024, 7, 14, 22, 0, 0, 0, time.UTC)) || reg.Offset != "+02:00" || reg.Assumed {
		t.Errorf("DATE_REGISTER = %+v", reg)
	}
	// No offset in the value: the portal's (+03:00, learned from its clock) is assumed.
	if ts.Raw != "24.08.2023 13:19:39" || !ts.UTC.Equal(time.Date(2023, 8, 24, 10, 19, 39, 0, time.UTC)) || ts.Offset != "+03:00" || !ts.Assumed {
		t.Errorf("TIMESTAMP_X = %+v", ts)
	}
	if _, ok := r.Dates["UF_EMPLOYMENT_DATE"]; ok && r.Dates["UF_EMPLOYMENT_DATE"].Raw == "" {
		t.Errorf("an empty date was kept as a date: %+v", r.Dates["UF_EMPLOYMENT_DATE"])
	}
}

// An entity listed by offset (here the portal's users, through a registry of its own) is read
// whole, and an interrupted get resumes at the offset of the first page it did not store.
func TestOffsetPagesResumeAtTheNextOffset(t *testing.T) {
	t.Parallel()
	const users = 730
	reg, err := engine.NewRegistry(&engine.Entity{Name: "roster", Batch: 50,
		Lister: &engine.OffsetPages{List: rest.List{Method: "user.get", Params: map[string]any{"ADMIN_MODE": true, "sort": "ID", "order": "ASC"}}}})
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: users, Seed: 12}, Registry: reg})
	ctx, cancel := context.WithCancel(w.Ctx)
	defer cancel()
	e := w.Engine(func(e *engine.Config) { e.Source = &enginetest.StopListing{Source: w.Source, Pages: 4, Cancel: cancel} })
	if _, err := e.Get(ctx, "roster"); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	inv := w.Inventory("roster")
	if inv.Complete || inv.PassRows != 250 || inv.Cursor != "250" {
		t.Fatalf("inventory after interruption = %+v, want 250 rows (the first page and 4 more), cursor 250", inv)
	}
	e = w.Engine()
	st, err := e.Get(w.Ctx, "roster")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || !st.Complete || st.Of("roster").Inserted != users-250 {
		t.Errorf("rerun = %+v, want the %d users after offset 250", st, users-250)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'roster'`); n != users {
		t.Errorf("%d stored, want %d", n, users)
	}
	// The next get is a new pass that finds nothing changed.
	st, err = e.Get(w.Ctx, "roster")
	if err != nil || st.Resumed || st.Of("roster").Unchanged != users {
		t.Errorf("third get = %+v, %v; want a new pass with %d unchanged", st, err, users)
	}
}
