package bitrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// recordingTarget notes every import call: its entity and keys, in order.
type recordingTarget struct {
	engine.Target
	mu    sync.Mutex
	calls []importCall
}

type importCall struct {
	entity string
	keys   []string
}

func (r *recordingTarget) Import(ctx context.Context, entity string, items []importapi.Item) ([]importapi.Result, error) {
	call := importCall{entity: entity}
	for _, it := range items {
		call.keys = append(call.keys, it.Key)
	}
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
	return r.Target.Import(ctx, entity, items)
}

func TestSetImportsInBatchesGroupsBeforeTheirMembers(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 230, Groups: 45, Seed: 11})
	rec := &recordingTarget{Target: v.client}
	e := v.engine(func(c *engine.Config) { c.Target = rec })
	v.migrateUsers(e)
	v.phases(e, bitrix.Groups, "get", "set", "verify")

	sizes := map[string]int{bitrix.Users: 50, bitrix.Groups: 20, bitrix.GroupMembers: 100}
	imported := map[string]bool{}
	for i, c := range rec.calls {
		if len(c.keys) > sizes[c.entity] {
			t.Errorf("call %d: %d %s in one batch, want at most %d", i, len(c.keys), c.entity, sizes[c.entity])
		}
		for _, k := range c.keys {
			if c.entity == bitrix.GroupMembers {
				group := strings.Split(k, ":")[2]
				if !imported["source:groups:"+group] {
					t.Errorf("call %d: membership %s sent before its group", i, k)
				}
			}
			imported[k] = true
		}
	}
	// 230 users in 5 batches; 45 groups in 3.
	var users, groups int
	for _, c := range rec.calls {
		switch c.entity {
		case bitrix.Users:
			users++
		case bitrix.Groups:
			groups++
		}
	}
	if users != 5 || groups != 3 {
		t.Errorf("%d users batches and %d groups batches, want 5 and 3", users, groups)
	}

	// References went through the id map: the target's group names the owner's target id, the
	// membership the target ids of its user and group.
	g := v.record(bitrix.Groups, strconv.Itoa(v.portal.GroupIDs()[0]))
	owner := v.targetID(bitrix.Users, ownerOf(t, g))
	got, _ := v.target.Lookup(bitrix.Groups, g.IdempotencyKey())
	if !strings.Contains(string(got.Payload), fmt.Sprintf(`"OWNER_ID":%q`, owner)) {
		t.Errorf("target group %s payload %s, want OWNER_ID %s", g.SourceID, got.Payload, owner)
	}
	m := v.portal.ActiveMembers(v.portal.GroupIDs()[0])[0]
	mkey := fmt.Sprintf("source:group_members:%s:%d", g.SourceID, m.UserID)
	gotM, ok := v.target.Lookup(bitrix.GroupMembers, mkey)
	wantM := fmt.Sprintf(`"GROUP_ID":%q`, v.targetID(bitrix.Groups, g.SourceID))
	wantU := fmt.Sprintf(`"USER_ID":%q`, v.targetID(bitrix.Users, strconv.Itoa(m.UserID)))
	if !ok || !strings.Contains(string(gotM.Payload), wantM) || !strings.Contains(string(gotM.Payload), wantU) {
		t.Errorf("target membership %s = %s, want %s and %s", mkey, gotM.Payload, wantM, wantU)
	}
	if s := v.target.Stats(); s.Duplicates != 0 || s.Created != s.Items {
		t.Errorf("target stats %+v: every item should have been created once", s)
	}
	for _, name := range []string{bitrix.Users, bitrix.Groups, bitrix.GroupMembers} {
		n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, name)
		if v.metric(`records_import_ok_total{entity=`+name+`}`) != float64(n) || v.target.Count(name) != n {
			t.Errorf("%s: %d records, %v counted imported, %d on the target", name, n,
				v.metric(`records_import_ok_total{entity=`+name+`}`), v.target.Count(name))
		}
	}
	if !strings.Contains(v.log.String(), "msg=progress entity=group_members phase=set done=") {
		t.Error("no set progress lines in the log")
	}
}

// fakeClock is a clock that moves only when set sleeps: retries wait no real time.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func TestSetRetriesOnTheScheduleThenGivesUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fail      int // retryable failures before the target takes the items
		want      status.Status
		wantWaits []time.Duration
		wantMoves []status.Status
	}{
		{
			name: "succeeds on the second retry", fail: 2 * 3, want: engine.ImportOK,
			// The first retry is due at once (0 s); the second 2 s later, plus jitter.
			wantWaits: []time.Duration{2200 * time.Millisecond},
			wantMoves: []status.Status{engine.ErrorRetry, engine.ErrorRetry, engine.ImportOK},
		},
		{
			name: "gives up after three retries", fail: 100, want: engine.ImportErr,
			wantWaits: []time.Duration{2200 * time.Millisecond, 6600 * time.Millisecond},
			wantMoves: []status.Status{engine.ErrorRetry, engine.ErrorRetry, engine.ErrorRetry, engine.ImportErr},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t, bitrixfake.Options{Users: 3, Seed: 12})
			clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			policy := retry.Default()
			policy.Sleep, policy.Rand = clock.Sleep, func() float64 { return 0.5 } // jitter: +10%
			e := v.engine(func(c *engine.Config) {
				c.Now, c.RetryPolicy = clock.Now, policy
			})
			v.phases(e, bitrix.Users, "get")
			v.target.FailItems(bitrix.Users, tt.fail)
			st, err := e.Set(v.ctx, bitrix.Users)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(clock.waits, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", clock.waits, tt.wantWaits)
			}
			for _, id := range v.portal.UserIDs() {
				r := v.record(bitrix.Users, strconv.Itoa(id))
				if r.Status != tt.want {
					t.Errorf("user %d ends in %s, want %s", id, r.Status, tt.want)
				}
				hist, err := engine.Machine.History(v.ctx, v.pool, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				var moves []status.Status
				for _, h := range hist {
					moves = append(moves, h.To)
				}
				if !slices.Equal(moves, tt.wantMoves) {
					t.Errorf("user %d moves %v, want %v", id, moves, tt.wantMoves)
				}
				if tt.want == engine.ImportErr && !strings.Contains(r.LastError, "gave up after 4 attempts: target: temporarily_unavailable") {
					t.Errorf("user %d reason %q", id, r.LastError)
				}
			}
			retries := float64(3 * (len(tt.wantMoves) - 1))
			if got := v.metric(`retry_attempts_total{entity=users}`); got != retries {
				t.Errorf("retry_attempts_total = %v, want %v", got, retries)
			}
			if tt.want == engine.ImportErr && (st[bitrix.Users].Failed != 3 || v.metric(`records_import_err_total{entity=users}`) != 3) {
				t.Errorf("stats %+v, import_err metric %v, want 3 failed", st[bitrix.Users], v.metric(`records_import_err_total{entity=users}`))
			}
			if !strings.Contains(v.log.String(), `level=WARN msg="record not imported" entity=users source_id=1 status=ERROR_RETRY`) {
				t.Error("no warning naming the entity and source id of a failed record")
			}
		})
	}
}

func TestSetPermanentErrorFailsOnlyThatRecord(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 30, Seed: 13})
	e := v.engine()
	v.phases(e, bitrix.Users, "get")
	bad := strconv.Itoa(v.portal.UserIDs()[5])
	v.target.RejectKey(bitrix.Users, "source:users:"+bad, "e-mail already used by another account")
	if _, err := e.Set(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	r := v.record(bitrix.Users, bad)
	if r.Status != engine.ImportErr || r.Attempts != 1 || !strings.Contains(r.LastError, "rejected: e-mail already used") {
		t.Errorf("rejected user: %s after %d attempts, reason %q; want IMPORT_ERR at once with the target's message", r.Status, r.Attempts, r.LastError)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND status = 'IMPORT_OK'`); n != 29 {
		t.Errorf("%d users imported, want the other 29", n)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_id_map WHERE entity = 'users'`); n != 29 {
		t.Errorf("%d id map rows, want 29", n)
	}
	// Verify does not pass with a record left behind, and names it.
	rep, err := e.Verify(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean() || len(rep.NotImported) != 1 || rep.NotImported[0].SourceID != bad {
		t.Errorf("verify = %+v, want it to name user %s", rep, bad)
	}
}

func TestSetResendsAfterLostAnswersWithoutDuplicates(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 120, Seed: 14})
	e := v.engine(func(c *engine.Config) {
		c.RetryPolicy = retry.Policy{Delays: []time.Duration{0, time.Millisecond, time.Millisecond}}
	})
	v.phases(e, bitrix.Users, "get")
	// The first batch is applied but its answer lost; the second gets a 503 page; the third
	// times out on a dropped connection.
	v.target.FailNext("import.users.batch", targetfake.FaultLostAnswer, 1)
	v.target.FailNext("import.users.batch", targetfake.FaultServerError, 1)
	v.target.FailNext("import.users.batch", targetfake.FaultDrop, 1)
	if _, err := e.Set(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND status = 'IMPORT_OK'`); n != 120 {
		t.Errorf("%d users imported, want 120", n)
	}
	s := v.target.Stats()
	if s.Duplicates != 0 || s.Created != 120 || v.target.Count(bitrix.Users) != 120 {
		t.Errorf("target %+v, %d records: want 120 created once each", s, v.target.Count(bitrix.Users))
	}
	if s.Unchanged == 0 {
		t.Error("the batch whose answer was lost was not sent again")
	}
}

// A 429 from the target is waited out for its Retry-After and the same batch sent again: it is
// not a failure of the records, which never pass through ERROR_RETRY.
func TestSetWaitsOutTargetRateLimit(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 120, Seed: 16})
	e := v.engine()
	v.phases(e, bitrix.Users, "get")
	v.target.FailNext("import.users.batch", targetfake.FaultRateLimited, 2)
	start := time.Now()
	if _, err := e.Set(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	// Batches go out concurrently, so the two 429s may be waited out side by side.
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("set took %v; a 429 with Retry-After: 1 should hold it at least 1 s", waited)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND status = 'IMPORT_OK'`); n != 120 {
		t.Errorf("%d users imported, want 120", n)
	}
	if n := v.count(`SELECT count(*) FROM status_history WHERE machine = 'bitrix' AND to_status = 'ERROR_RETRY'`); n != 0 {
		t.Errorf("%d records went to ERROR_RETRY over a 429", n)
	}
	if s := v.target.Stats(); s.RateLimited != 2 || s.Created != 120 || s.Duplicates != 0 {
		t.Errorf("target %+v: want 2 rate-limited answers and 120 created once each", s)
	}
}

func TestSetNeverImportsHalfMappedRecords(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 200, Groups: 12, Seed: 15})
	e := v.engine()
	// The owner of the first group was deleted from the portal before users were read.
	v.phases(e, bitrix.Groups, "get")
	first := v.record(bitrix.Groups, strconv.Itoa(v.portal.GroupIDs()[0]))
	owner := ownerOf(t, first)
	ownerID, _ := strconv.Atoi(owner)
	v.portal.DeleteUser(ownerID)
	v.migrateUsers(e)
	// A member of the second group lost its user's id map row.
	second := strconv.Itoa(v.portal.GroupIDs()[1])
	var lostUser string
	for _, m := range v.portal.ActiveMembers(v.portal.GroupIDs()[1]) {
		if u := strconv.Itoa(m.UserID); u != owner {
			lostUser = u
			break
		}
	}
	if _, err := v.pool.Exec(v.ctx, `DELETE FROM bitrix_id_map WHERE entity = 'users' AND source_id = $1`, lostUser); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Set(v.ctx, bitrix.Groups); err != nil {
		t.Fatal(err)
	}

	g := v.record(bitrix.Groups, first.SourceID)
	want := fmt.Sprintf("OWNER_ID %s: user %s has no target id (not imported)", owner, owner)
	if g.Status != engine.ImportErr || g.LastError != want {
		t.Errorf("group with a deleted owner: %s %q, want IMPORT_ERR %q", g.Status, g.LastError, want)
	}
	if _, ok := v.target.Lookup(bitrix.Groups, g.IdempotencyKey()); ok {
		t.Error("the group with an unresolvable owner reached the target")
	}
	m := v.record(bitrix.GroupMembers, second+":"+lostUser)
	if m.Status != engine.ImportErr || !strings.Contains(m.LastError, "USER_ID "+lostUser) {
		t.Errorf("membership with an unmapped user: %s %q", m.Status, m.LastError)
	}
	if _, ok := v.target.Lookup(bitrix.GroupMembers, m.IdempotencyKey()); ok {
		t.Error("the membership with an unmapped user reached the target")
	}
	// The first group's members wait for it rather than fail.
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'group_members' AND parent_source_id = $1 AND status <> 'NEW'`, first.SourceID); n != 0 {
		t.Errorf("%d memberships of the failed group left NEW", n)
	}

	rep, err := e.Verify(v.ctx, bitrix.Groups)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean() || v.inventory(bitrix.Groups).Verified {
		t.Fatal("groups verified with an unresolved owner")
	}
	var groups []engine.RecordIssue
	for _, issue := range rep.UnresolvedRefs {
		if issue.Entity == bitrix.Groups {
			groups = append(groups, issue)
		}
	}
	if len(groups) != 1 || groups[0].SourceID != first.SourceID {
		t.Errorf("unresolved owners = %+v, want group %s", groups, first.SourceID)
	}
}

func TestGroupsSetRequiresVerifiedUsers(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 80, Groups: 5, Seed: 16})
	e := v.engine()
	v.phases(e, bitrix.Groups, "get")
	tests := []struct {
		name    string
		prepare func()
		want    string
	}{
		{"users never read", func() {}, "users were never read"},
		{"users read, not imported", func() { v.phases(e, bitrix.Users, "get") }, "80 users records are not IMPORT_OK; run `ingest bitrix users set`"},
		{"users imported, not verified", func() { v.phases(e, bitrix.Users, "set") }, "run `ingest bitrix users verify`"},
	}
	for _, tt := range tests {
		tt.prepare()
		_, err := e.Set(v.ctx, bitrix.Groups)
		if !errors.Is(err, engine.ErrPrerequisite) || !strings.Contains(err.Error(), "groups set refused: users must be imported and verified first") ||
			!strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: groups set = %v, want a refusal saying %q", tt.name, err, tt.want)
		}
	}
	if v.target.Count(bitrix.Groups) != 0 {
		t.Error("a refused set imported groups")
	}
	v.phases(e, bitrix.Users, "verify")
	v.phases(e, bitrix.Groups, "set")
	if v.target.Count(bitrix.Groups) != 5 {
		t.Errorf("%d groups imported after users were verified, want 5", v.target.Count(bitrix.Groups))
	}
}

func TestUnreadableDateFailsOnlyItsRecord(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 40, Seed: 17})
	bad := v.portal.UserIDs()[7]
	v.portal.SetUserField(bad, "PERSONAL_BIRTHDAY", "31/02/1990")
	e := v.engine()
	v.phases(e, bitrix.Users, "get", "set")
	r := v.record(bitrix.Users, strconv.Itoa(bad))
	want := `date field PERSONAL_BIRTHDAY: cannot read "31/02/1990": not a date in any format Bitrix24 sends`
	if r.Status != engine.ImportErr || r.LastError != want {
		t.Errorf("user with a bad date: %s %q, want IMPORT_ERR %q", r.Status, r.LastError, want)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND status = 'IMPORT_OK'`); n != 39 {
		t.Errorf("%d other users imported, want 39", n)
	}
	// What the target got keeps each date's instant and its original offset.
	r = v.record(bitrix.Users, "1")
	got, _ := v.target.Lookup(bitrix.Users, r.IdempotencyKey())
	ts := r.Dates["TIMESTAMP_X"]
	want = ts.UTC.In(time.FixedZone("", 3*60*60)).Format(time.RFC3339)
	if !strings.Contains(string(got.Payload), `"TIMESTAMP_X":"`+want+`"`) {
		t.Errorf("target payload %s, want TIMESTAMP_X %s", got.Payload, want)
	}
}

// ownerOf returns the OWNER_ID of a stored group.
func ownerOf(t *testing.T, g engine.Record) string {
	t.Helper()
	var p struct{ OWNER_ID string }
	if err := json.Unmarshal(g.Payload, &p); err != nil || p.OWNER_ID == "" {
		t.Fatalf("group %s has no OWNER_ID (%v): %s", g.SourceID, err, g.Payload)
	}
	return p.OWNER_ID
}

// targetID returns the target id a record was imported under.
func (v *env) targetID(entity, sourceID string) string {
	v.t.Helper()
	var id string
	if err := v.pool.QueryRow(v.ctx, `SELECT target_id FROM bitrix_id_map WHERE entity = $1 AND source_id = $2`, entity, sourceID).Scan(&id); err != nil {
		v.t.Fatalf("target id of %s %s: %v", entity, sourceID, err)
	}
	return id
}
