package bitrix_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
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
	// One probe for the portal's clock, one counted first page, then 2,500 rows per request.
	want := 1 + 1 + (users-rest.PageSize+2_499)/2_500
	if got := v.portal.Stats().Requests; got != want {
		t.Errorf("%d HTTP requests, want %d", got, want)
	}
	if got := v.source.Stats().QueryLimit; got != 0 {
		t.Errorf("%d QUERY_LIMIT_EXCEEDED answers", got)
	}

	// Every page is in the page log, in order, each starting where the previous ended.
	rows, err := v.pool.Query(v.ctx, `SELECT cursor, next_cursor, count, total FROM bitrix_page_log WHERE entity = 'users' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	prev, sum, pages := "0", 0, 0
	for rows.Next() {
		var cursor, next string
		var count int
		var total *int64
		if err := rows.Scan(&cursor, &next, &count, &total); err != nil {
			t.Fatal(err)
		}
		if cursor != prev {
			t.Errorf("page %d starts after %s, want %s", pages, cursor, prev)
		}
		if total == nil || *total != users {
			t.Errorf("page %d total = %v, want %d", pages, total, users)
		}
		prev, sum, pages = next, sum+count, pages+1
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

// cancelAfter stops a get after a number of pages were stored, as a crash or a SIGTERM would.
type cancelAfter struct {
	bitrix.Source
	pages  int
	cancel context.CancelFunc
}

func (c *cancelAfter) ListByID(ctx context.Context, s rest.Scan, after string, fn func(rest.Page) error) error {
	n := 0
	return c.Source.ListByID(ctx, s, after, func(p rest.Page) error {
		if err := fn(p); err != nil {
			return err
		}
		if n++; n == c.pages {
			c.cancel()
		}
		return nil
	})
}

func TestGetResumesFromThePageLog(t *testing.T) {
	t.Parallel()
	const groups = 400 // 8 pages, each with the members of its 50 groups
	v := newEnv(t, bitrixfake.Options{Users: 500, Groups: groups, Seed: 2})
	ctx, cancel := context.WithCancel(v.ctx)
	defer cancel()
	e := v.engine()
	e.Source = &cancelAfter{Source: v.source, pages: 3, cancel: cancel}
	st, err := e.Get(ctx, bitrix.Groups)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	if st.Of(bitrix.Groups).Rows != 150 {
		t.Fatalf("interrupted get stored %d groups, want 150 (3 pages)", st.Of(bitrix.Groups).Rows)
	}
	inv := v.inventory(bitrix.Groups)
	if inv.Complete || inv.PassRows != 150 {
		t.Fatalf("inventory after interruption = %+v", inv)
	}
	cursor := inv.Cursor
	if last := v.count(`SELECT max(source_id::int) FROM bitrix_records WHERE entity = 'groups'`); strconv.Itoa(last) != cursor {
		t.Errorf("cursor %s, want the last stored group %d", cursor, last)
	}
	membersBefore := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'group_members'`)

	before := v.portal.Stats().Calls["sonet_group.get"]
	st, err = v.engine().Get(v.ctx, bitrix.Groups)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || st.Cursor != cursor || st.Pass != inv.Pass {
		t.Errorf("rerun = %+v, want it to resume pass %d after %s", st, inv.Pass, cursor)
	}
	if st.Of(bitrix.Groups).Rows != groups-150 || st.Of(bitrix.Groups).Inserted != groups-150 || st.Of(bitrix.Groups).Unchanged != 0 {
		t.Errorf("rerun read %d groups (%d new, %d unchanged), want only the %d not stored yet", st.Of(bitrix.Groups).Rows, st.Of(bitrix.Groups).Inserted, st.Of(bitrix.Groups).Unchanged, groups-150)
	}
	// Resuming did not list the first pages again: 250 groups are 5 pages, in a counted first
	// call and one batch, besides the clock probe.
	if calls := v.portal.Stats().Calls["sonet_group.get"] - before; calls > 1+1+5 {
		t.Errorf("rerun made %d sonet_group.get calls, want at most 7", calls)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'groups'`); n != groups {
		t.Errorf("%d groups stored, want %d", n, groups)
	}
	var members int
	for _, id := range v.portal.GroupIDs() {
		members += len(v.portal.ActiveMembers(id))
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'group_members'`); n != members || n <= membersBefore {
		t.Errorf("%d memberships stored, want %d (every active member of every group)", n, members)
	}
	if n := v.count(`SELECT count(*) FROM (SELECT cursor FROM bitrix_page_log WHERE entity = 'groups' GROUP BY pass, cursor HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d pages logged twice in one pass", n)
	}
	if inv := v.inventory(bitrix.Groups); !inv.Complete || inv.PassRows != groups || *inv.SourceTotal != groups {
		t.Errorf("inventory after resume = %+v", inv)
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
	if r.Status != bitrix.New || !strings.Contains(string(r.Payload), "Главный бухгалтер") {
		t.Errorf("changed user: status %s, payload %s; want NEW with the new payload", r.Status, r.Payload)
	}
	hist, err := bitrix.Machine.History(v.ctx, v.pool, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1]; last.From != bitrix.ImportOK || last.To != bitrix.New || last.Reason != "changed on the source" {
		t.Errorf("last move of the changed user = %+v, want IMPORT_OK -> NEW, changed on the source", last)
	}
	if got := v.record(bitrix.Users, online); got.Status != bitrix.ImportOK || string(got.Payload) != string(untouched.Payload) {
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

func TestGetKeepsDatesAsReceivedWithUTCAndOffset(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 60, Seed: 5})
	id := strconv.Itoa(v.portal.UserIDs()[2])
	v.portal.SetUserField(v.portal.UserIDs()[2], "DATE_REGISTER", "2024-07-15T00:00:00+02:00")
	v.portal.SetUserField(v.portal.UserIDs()[2], "TIMESTAMP_X", "24.08.2023 13:19:39")
	if _, err := v.engine().Get(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	r := v.record(bitrix.Users, id)
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

func (v *env) inventory(entity string) bitrix.Inventory {
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
	return bitrix.Inventory{}
}
