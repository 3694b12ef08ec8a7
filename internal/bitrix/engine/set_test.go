package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

func TestSetImportsInBatchesParentsBeforeTheirChildren(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 230, Groups: 45, Seed: 11})
	rec := &enginetest.RecordingTarget{Target: w.Client}
	e := w.Engine(func(e *engine.Config) { e.Target = rec })
	w.Migrate(e, people, teams)

	sizes := map[string]int{people: 50, teams: 20, teamMembers: 100}
	imported := map[string]bool{}
	for i, c := range rec.Calls() {
		if len(c.Keys) > sizes[c.Entity] {
			t.Errorf("call %d: %d %s in one batch, want at most %d", i, len(c.Keys), c.Entity, sizes[c.Entity])
		}
		for _, k := range c.Keys {
			if c.Entity == teamMembers {
				group := strings.Split(k, ":")[2]
				if !imported["source:teams:"+group] {
					t.Errorf("call %d: membership %s sent before its group", i, k)
				}
			}
			imported[k] = true
		}
	}
	// 230 people in 5 batches; 45 teams in 3.
	var users, groups int
	for _, c := range rec.Calls() {
		switch c.Entity {
		case people:
			users++
		case teams:
			groups++
		}
	}
	if users != 5 || groups != 3 {
		t.Errorf("%d people batches and %d teams batches, want 5 and 3", users, groups)
	}

	// References went through the id map: the target's group names the owner's target id, the
	// membership the target ids of its user and group.
	g := w.Record(teams, strconv.Itoa(w.Portal.GroupIDs()[0]))
	owner := w.TargetID(people, ownerOf(t, g))
	got, _ := w.Target.Lookup(teams, g.IdempotencyKey())
	if !strings.Contains(string(got.Payload), fmt.Sprintf(`"OWNER_ID":%q`, owner)) {
		t.Errorf("target group %s payload %s, want OWNER_ID %s", g.SourceID, got.Payload, owner)
	}
	m := w.Portal.ActiveMembers(w.Portal.GroupIDs()[0])[0]
	mkey := fmt.Sprintf("source:team_members:%s:%d", g.SourceID, m.UserID)
	gotM, ok := w.Target.Lookup(teamMembers, mkey)
	wantM := fmt.Sprintf(`"GROUP_ID":%q`, w.TargetID(teams, g.SourceID))
	wantU := fmt.Sprintf(`"USER_ID":%q`, w.TargetID(people, strconv.Itoa(m.UserID)))
	if !ok || !strings.Contains(string(gotM.Payload), wantM) || !strings.Contains(string(gotM.Payload), wantU) {
		t.Errorf("target membership %s = %s, want %s and %s", mkey, gotM.Payload, wantM, wantU)
	}
	if s := w.Target.Stats(); s.Duplicates != 0 || s.Created != s.Items {
		t.Errorf("target stats %+v: every item should have been created once", s)
	}
	for _, name := range []string{people, teams, teamMembers} {
		n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, name)
		if w.Metric(`records_import_ok_total{entity=`+name+`}`) != float64(n) || w.Target.Count(name) != n {
			t.Errorf("%s: %d records, %v counted imported, %d on the target", name, n,
				w.Metric(`records_import_ok_total{entity=`+name+`}`), w.Target.Count(name))
		}
	}
	if !strings.Contains(w.Log.String(), "msg=progress entity=team_members phase=set done=") {
		t.Error("no set progress lines in the log")
	}
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
			w := newWorld(t, bitrixfake.Options{Users: 3, Seed: 12})
			clock := enginetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			e := w.Engine(func(e *engine.Config) {
				e.Now = clock.Now
				policy := retry.Default()
				policy.Sleep, policy.Rand = clock.Sleep, func() float64 { return 0.5 } // jitter: +10%
				e.RetryPolicy = policy
			})
			w.Phases(e, people, "get")
			w.Target.FailItems(people, tt.fail)
			st, err := e.Set(w.Ctx, people)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(clock.Waits(), tt.wantWaits) {
				t.Errorf("waits = %v, want %v", clock.Waits(), tt.wantWaits)
			}
			for _, id := range w.Portal.UserIDs() {
				r := w.Record(people, strconv.Itoa(id))
				if r.Status != tt.want {
					t.Errorf("user %d ends in %s, want %s", id, r.Status, tt.want)
				}
				hist, err := engine.Machine.History(w.Ctx, w.Pool, r.ID)
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
			if got := w.Metric(`retry_attempts_total{entity=people}`); got != retries {
				t.Errorf("retry_attempts_total = %v, want %v", got, retries)
			}
			if tt.want == engine.ImportErr && (st[people].Failed != 3 || w.Metric(`records_import_err_total{entity=people}`) != 3) {
				t.Errorf("stats %+v, import_err metric %v, want 3 failed", st[people], w.Metric(`records_import_err_total{entity=people}`))
			}
			if !strings.Contains(w.Log.String(), `level=WARN msg="record not imported" entity=people source_id=1 status=ERROR_RETRY`) {
				t.Error("no warning naming the entity and source id of a failed record")
			}
		})
	}
}

func TestSetPermanentErrorFailsOnlyThatRecord(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 30, Seed: 13})
	e := w.Engine()
	w.Phases(e, people, "get")
	bad := strconv.Itoa(w.Portal.UserIDs()[5])
	w.Target.RejectKey(people, "source:people:"+bad, "e-mail already used by another account")
	if _, err := e.Set(w.Ctx, people); err != nil {
		t.Fatal(err)
	}
	r := w.Record(people, bad)
	if r.Status != engine.ImportErr || r.Attempts != 1 || !strings.Contains(r.LastError, "rejected: e-mail already used") {
		t.Errorf("rejected user: %s after %d attempts, reason %q; want IMPORT_ERR at once with the target's message", r.Status, r.Attempts, r.LastError)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people' AND status = 'IMPORT_OK'`); n != 29 {
		t.Errorf("%d users imported, want the other 29", n)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_id_map WHERE entity = 'people'`); n != 29 {
		t.Errorf("%d id map rows, want 29", n)
	}
	// Verify does not pass with a record left behind, and names it.
	rep, err := e.Verify(w.Ctx, people)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean() || len(rep.NotImported) != 1 || rep.NotImported[0].SourceID != bad {
		t.Errorf("verify = %+v, want it to name user %s", rep, bad)
	}
}

func TestSetResendsAfterLostAnswersWithoutDuplicates(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 120, Seed: 14})
	e := w.Engine(func(e *engine.Config) {
		e.RetryPolicy = retry.Policy{Delays: []time.Duration{0, time.Millisecond, time.Millisecond}}
	})
	w.Phases(e, people, "get")
	// The first batch is applied but its answer lost; the second gets a 503 page; the third
	// times out on a dropped connection.
	w.Target.FailNext("import.people.batch", targetfake.FaultLostAnswer, 1)
	w.Target.FailNext("import.people.batch", targetfake.FaultServerError, 1)
	w.Target.FailNext("import.people.batch", targetfake.FaultDrop, 1)
	if _, err := e.Set(w.Ctx, people); err != nil {
		t.Fatal(err)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people' AND status = 'IMPORT_OK'`); n != 120 {
		t.Errorf("%d users imported, want 120", n)
	}
	s := w.Target.Stats()
	if s.Duplicates != 0 || s.Created != 120 || w.Target.Count(people) != 120 {
		t.Errorf("target %+v, %d records: want 120 created once each", s, w.Target.Count(people))
	}
	if s.Unchanged == 0 {
		t.Error("the batch whose answer was lost was not sent again")
	}
}

// A 429 from the target is waited out for its Retry-After and the same batch sent again: it is
// not a failure of the records, which never pass through ERROR_RETRY.
func TestSetWaitsOutTargetRateLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 120, Seed: 16})
	e := w.Engine()
	w.Phases(e, people, "get")
	w.Target.FailNext("import.people.batch", targetfake.FaultRateLimited, 2)
	start := time.Now()
	if _, err := e.Set(w.Ctx, people); err != nil {
		t.Fatal(err)
	}
	// Batches go out concurrently, so the two 429s may be waited out side by side.
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("set took %v; a 429 with Retry-After: 1 should hold it at least 1 s", waited)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people' AND status = 'IMPORT_OK'`); n != 120 {
		t.Errorf("%d users imported, want 120", n)
	}
	if n := w.Count(`SELECT count(*) FROM status_history WHERE machine = 'bitrix' AND to_status = 'ERROR_RETRY'`); n != 0 {
		t.Errorf("%d records went to ERROR_RETRY over a 429", n)
	}
	if s := w.Target.Stats(); s.RateLimited != 2 || s.Created != 120 || s.Duplicates != 0 {
		t.Errorf("target %+v: want 2 rate-limited answers and 120 created once each", s)
	}
}

func TestSetNeverImportsHalfMappedRecords(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 200, Groups: 12, Seed: 15})
	e := w.Engine()
	// The owner of the first group was deleted from the portal before users were read.
	w.Phases(e, teams, "get")
	first := w.Record(teams, strconv.Itoa(w.Portal.GroupIDs()[0]))
	owner := ownerOf(t, first)
	ownerID, _ := strconv.Atoi(owner)
	w.Portal.DeleteUser(ownerID)
	w.Migrate(e, people)
	// A member of the second group lost its user's id map row.
	second := strconv.Itoa(w.Portal.GroupIDs()[1])
	var lostUser string
	for _, m := range w.Portal.ActiveMembers(w.Portal.GroupIDs()[1]) {
		if u := strconv.Itoa(m.UserID); u != owner {
			lostUser = u
			break
		}
	}
	if _, err := w.Pool.Exec(w.Ctx, `DELETE FROM bitrix_id_map WHERE entity = 'people' AND source_id = $1`, lostUser); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Set(w.Ctx, teams); err != nil {
		t.Fatal(err)
	}

	g := w.Record(teams, first.SourceID)
	want := fmt.Sprintf("OWNER_ID %s: people %s has no target id (not imported)", owner, owner)
	if g.Status != engine.ImportErr || g.LastError != want {
		t.Errorf("group with a deleted owner: %s %q, want IMPORT_ERR %q", g.Status, g.LastError, want)
	}
	if _, ok := w.Target.Lookup(teams, g.IdempotencyKey()); ok {
		t.Error("the group with an unresolvable owner reached the target")
	}
	m := w.Record(teamMembers, second+":"+lostUser)
	if m.Status != engine.ImportErr || !strings.Contains(m.LastError, "USER_ID "+lostUser) {
		t.Errorf("membership with an unmapped user: %s %q", m.Status, m.LastError)
	}
	if _, ok := w.Target.Lookup(teamMembers, m.IdempotencyKey()); ok {
		t.Error("the membership with an unmapped user reached the target")
	}
	// The first group's members wait for it rather than fail.
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'team_members' AND parent_source_id = $1 AND status <> 'NEW'`, first.SourceID); n != 0 {
		t.Errorf("%d memberships of the failed group left NEW", n)
	}

	rep, err := e.Verify(w.Ctx, teams)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean() || w.Inventory(teams).Verified {
		t.Fatal("groups verified with an unresolved owner")
	}
	var groups []engine.RecordIssue
	for _, issue := range rep.UnresolvedRefs {
		if issue.Entity == teams {
			groups = append(groups, issue)
		}
	}
	if len(groups) != 1 || groups[0].SourceID != first.SourceID {
		t.Errorf("unresolved owners = %+v, want group %s", groups, first.SourceID)
	}
}

func TestSetRequiresVerifiedPrerequisites(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 80, Groups: 5, Seed: 16})
	e := w.Engine()
	w.Phases(e, teams, "get")
	tests := []struct {
		name    string
		prepare func()
		want    string
	}{
		{"people never read", func() {}, "people were never read"},
		{"people read, not imported", func() { w.Phases(e, people, "get") }, "80 people records are not IMPORT_OK; run `ingest bitrix people set`"},
		{"people imported, not verified", func() { w.Phases(e, people, "set") }, "run `ingest bitrix people verify`"},
	}
	for _, tt := range tests {
		tt.prepare()
		_, err := e.Set(w.Ctx, teams)
		if !errors.Is(err, engine.ErrPrerequisite) || !strings.Contains(err.Error(), "teams set refused: people must be imported and verified first") ||
			!strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: groups set = %v, want a refusal saying %q", tt.name, err, tt.want)
		}
	}
	if w.Target.Count(teams) != 0 {
		t.Error("a refused set imported groups")
	}
	w.Phases(e, people, "verify")
	w.Phases(e, teams, "set")
	if w.Target.Count(teams) != 5 {
		t.Errorf("%d groups imported after users were verified, want 5", w.Target.Count(teams))
	}
}

func TestUnreadableDateFailsOnlyItsRecord(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 40, Seed: 17})
	bad := w.Portal.UserIDs()[7]
	w.Portal.SetUserField(bad, "PERSONAL_BIRTHDAY", "31/02/1990")
	e := w.Engine()
	w.Phases(e, people, "get", "set")
	r := w.Record(people, strconv.Itoa(bad))
	want := `date field PERSONAL_BIRTHDAY: cannot read "31/02/1990": not a date in any format Bitrix24 sends`
	if r.Status != engine.ImportErr || r.LastError != want {
		t.Errorf("user with a bad date: %s %q, want IMPORT_ERR %q", r.Status, r.LastError, want)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'people' AND status = 'IMPORT_OK'`); n != 39 {
		t.Errorf("%d other users imported, want 39", n)
	}
	// What the target got keeps each date's instant and its original offset.
	r = w.Record(people, "1")
	got, _ := w.Target.Lookup(people, r.IdempotencyKey())
	ts := r.Dates["TIMESTAMP_X"]
	want = ts.UTC.In(time.FixedZone("", 3*60*60)).Format(time.RFC3339)
	if !strings.Contains(string(got.Payload), `"TIMESTAMP_X":"`+want+`"`) {
		t.Errorf("target payload %s, want TIMESTAMP_X %s", got.Payload, want)
	}
}

// ownerOf returns the OWNER_ID of a stored team.
func ownerOf(t *testing.T, g engine.Record) string {
	t.Helper()
	var p struct{ OWNER_ID string }
	if err := json.Unmarshal(g.Payload, &p); err != nil || p.OWNER_ID == "" {
		t.Fatalf("team %s has no OWNER_ID (%v): %s", g.SourceID, err, g.Payload)
	}
	return p.OWNER_ID
}
