package status_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// coded is tries with reason codes and attempts in flight.
var coded = &status.Machine{
	Name:        "coded",
	Table:       "coded",
	Key:         "key",
	Statuses:    things.Statuses,
	Auto:        append(append([]status.Transition{}, things.Auto...), status.Transition{From: broken, To: pending}),
	Manual:      things.Manual,
	Retry:       &status.Retry{Status: failed, GiveUp: broken, Policy: retry.Policy{Delays: []time.Duration{time.Second, time.Minute}}},
	ReasonCodes: true,
	InFlight:    true,
}

// codedDDL is triesDDL with the columns of ReasonCodes and InFlight.
var codedDDL = strings.NewReplacer("CREATE TABLE tries", "CREATE TABLE coded",
	"next_attempt_at timestamptz\n", "next_attempt_at timestamptz,\n    reason_code text,\n    attempt_started_at timestamptz,\n    attempt_run_id bigint\n").
	Replace(triesDDL)

func setupCoded(t *testing.T) *testBundle {
	t.Helper()
	b := setupTries(t)
	if _, err := b.pool.Exec(b.ctx, codedDDL); err != nil {
		t.Fatalf("create coded: %v", err)
	}
	return b
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := b.pool.QueryRow(b.ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (b *testBundle) text(t *testing.T, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := b.pool.QueryRow(b.ctx, sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestFailWritesTheCodeAndTheHistoryInOneStatement(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	c := status.Change{Actor: "test"}
	out, err := coded.Fail(b.ctx, b.pool, 1, pending, status.Failure{Cause: "parent gone", Code: "parent_unavailable"}, c)
	if err != nil || !out.Moved || out.To != broken || out.Reason != "parent gone" {
		t.Fatalf("fail = %+v, %v", out, err)
	}
	if got := b.text(t, `SELECT reason_code || '|' || last_error || '|' || retries || '|' || (next_attempt_at IS NULL) FROM coded WHERE id = 1`); got != "parent_unavailable|parent gone|0|true" {
		t.Errorf("row = %s", got)
	}
	if got := b.text(t, `SELECT string_agg(from_status || '>' || to_status || ':' || reason, ';' ORDER BY id) FROM status_history WHERE machine = 'coded'`); got != "pending>broken:parent gone" {
		t.Errorf("history = %s", got)
	}
	// A move without a code clears it, as a success clears last_error.
	if _, err := coded.Move(b.ctx, b.pool, 1, broken, pending, c); err != nil {
		t.Fatal(err)
	}
	if got := b.text(t, `SELECT coalesce(reason_code, 'NULL') FROM coded WHERE id = 1`); got != "NULL" {
		t.Errorf("code after a move without one = %s", got)
	}
	// A failure from a status it may not leave that way is an error, and changes nothing.
	if _, err := coded.Fail(b.ctx, b.pool, 1, done, status.Failure{Cause: "x"}, c); err == nil {
		t.Error("fail from done: no error")
	}
}

func TestConcurrentFailuresCountEveryRetry(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, status) VALUES (1, 'failed')`); err != nil {
		t.Fatal(err)
	}
	// Two failures of the same record at once: one statement each, so the second reads the first's
	// retry count (or finds the record moved) and never writes a stale one.
	var wg sync.WaitGroup
	outs := make([]status.Outcome, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := coded.Fail(b.ctx, b.pool, 1, failed, status.Failure{Cause: "503", Retryable: true}, status.Change{Actor: "test"})
			if err != nil {
				t.Error(err)
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	if got := b.text(t, `SELECT status || ' ' || retries FROM coded WHERE id = 1`); got != "failed 2" {
		t.Errorf("after two concurrent retryable failures: %s, want failed 2 (%+v)", got, outs)
	}
}

func TestReviveByCodeWhenTheParentCanGo(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	_, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, key, parent, status, reason_code, last_error) VALUES
 (1, 'a', NULL, 'pending', NULL, NULL), (2, 'b', NULL, 'broken', 'other', 'x'),
 (10, 'a1', 'a', 'broken', 'parent_unavailable', 'wording changed'),
 (11, 'b1', 'b', 'broken', 'parent_unavailable', 'parent: b is broken'),
 (12, 'a2', 'a', 'broken', 'other', 'parent: a'),
 (13, 'z1', 'z', 'broken', 'parent_unavailable', 'never read')`)
	if err != nil {
		t.Fatal(err)
	}
	parent := &status.ParentPick{Column: "parent", Machine: coded, Statuses: []status.Status{pending, done, failed}}
	moved, err := coded.Revive(b.ctx, b.pool, status.ReviveParams{From: broken, To: pending, Code: "parent_unavailable",
		Parent: parent, Change: status.Change{Reason: "parent can go", Actor: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := join(moved); got != "10" {
		t.Errorf("revived %s, want 10 (11's parent is broken, 12 failed for another reason, 13's parent is missing)", got)
	}
	if _, err := things.Revive(b.ctx, b.pool, status.ReviveParams{From: broken, To: pending, Code: "x"}); err == nil {
		t.Error("revive on a machine without reason codes: no error")
	}
}

func TestResetSchedule(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, status, retries, next_attempt_at) VALUES (1, 'failed', 2, now()), (2, 'failed', 1, now())`); err != nil {
		t.Fatal(err)
	}
	if err := coded.ResetSchedule(b.ctx, b.pool, []int64{1}); err != nil {
		t.Fatal(err)
	}
	if got := b.text(t, `SELECT string_agg(id || ':' || retries || ':' || (next_attempt_at IS NULL), ',' ORDER BY id) FROM coded`); got != "1:0:true,2:1:false" {
		t.Errorf("after reset of 1: %s", got)
	}
}

func TestPickChildrenInTheirOrder(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	_, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, key, parent, status) VALUES
 (1, 'm:30', 'c', 'pending'), (2, 'm:4', 'c', 'pending'), (3, 'm:100', 'c', 'pending'),
 (4, 'm:1', 'd', 'pending'), (5, 'm:2', 'c', 'done')`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := coded.PickChildren(b.ctx, b.pool, status.ChildPick{Column: "parent", Key: "c",
		Statuses: []status.Status{pending}, Order: "split_part(key, ':', 2)::bigint"})
	if err != nil {
		t.Fatal(err)
	}
	if got := join(ids); got != "2,1,3" {
		t.Errorf("children of c = %s, want 2,1,3 (by number, pending only)", got)
	}
}

func TestAttemptsInFlight(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, status) VALUES (1, 'pending'), (2, 'pending'), (3, 'failed'), (4, 'done')`); err != nil {
		t.Fatal(err)
	}
	// A batch starts in one statement; a record no longer in a picked status is left out.
	started, err := coded.StartAttempts(b.ctx, b.pool, []int64{1, 2, 3, 4}, []status.Status{pending, failed}, 7)
	if err != nil || join(started) != "1,2,3" {
		t.Fatalf("start = %v, %v; want 1,2,3", started, err)
	}
	if ok, err := coded.StartAttempt(b.ctx, b.pool, 4, pending, 0); err != nil || ok {
		t.Errorf("start of a record no longer in its status: %v %v", ok, err)
	}
	// A move ends the attempt; so does EndAttempt (a stop), leaving the record as it was.
	if _, err := coded.Move(b.ctx, b.pool, 1, pending, done, status.Change{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := coded.EndAttempt(b.ctx, b.pool, 3); err != nil {
		t.Fatal(err)
	}
	if got := b.text(t, `SELECT string_agg(id || ':' || coalesce(attempt_run_id::text, '-'), ',' ORDER BY id) FROM coded WHERE attempt_started_at IS NOT NULL`); got != "2:7" {
		t.Fatalf("open attempts = %s, want 2:7", got)
	}
	if _, err := things.StartAttempt(b.ctx, b.pool, 1, pending, 0); err == nil {
		t.Error("start on a machine without InFlight: no error")
	}
}

// TestFailUnfinished plays a record that kills the process every time: each run counts the
// attempt the previous one left open as a failed attempt, on the schedule, until the record is
// given up on with a reason that says the process died; records of other statuses and finished
// attempts are left alone.
func TestFailUnfinished(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, status) VALUES (1, 'pending'), (2, 'pending'), (3, 'done')`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE coded SET attempt_started_at = now(), attempt_run_id = 5 WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	picked := []status.Status{pending, failed}
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c := status.Change{Actor: "run"}
	// coded retries twice: the third unfinished attempt gives up.
	for run, want := range []status.Status{failed, failed, broken} {
		if _, err := coded.StartAttempt(b.ctx, b.pool, 1, b.statusOf(t, 1), int64(run+1)); err != nil {
			t.Fatal(err)
		}
		got, err := coded.FailUnfinished(b.ctx, b.pool, status.UnfinishedParams{Statuses: picked, Now: t0}, c)
		if err != nil || len(got) != 1 {
			t.Fatalf("run %d: %+v, %v; want record 1 alone", run, got, err)
		}
		u := got[0]
		if u.ID != 1 || !u.Moved || u.To != want || u.RunID != int64(run+1) || u.StartedAt.IsZero() || u.From != map[bool]status.Status{true: pending, false: failed}[run == 0] {
			t.Errorf("run %d: %+v, want to %s", run, u, want)
		}
		if !strings.Contains(u.Reason, fmt.Sprintf("by run %d", run+1)) || !strings.Contains(u.Reason, "the process died") {
			t.Errorf("run %d: reason %q", run, u.Reason)
		}
		if want == broken && !strings.HasPrefix(u.Reason, "gave up after 3 attempts: attempt started ") {
			t.Errorf("give-up reason %q", u.Reason)
		}
		if want == failed && !u.NextAttemptAt.After(t0) {
			t.Errorf("run %d: next attempt at %v, want after %v", run, u.NextAttemptAt, t0)
		}
	}
	if got := b.text(t, `SELECT reason_code || '|' || attempts || '|' || (attempt_started_at IS NULL) FROM coded WHERE id = 1`); got != "attempt_unfinished|3|true" {
		t.Errorf("record 1: %s, want attempt_unfinished|3|true", got)
	}
	if got := b.text(t, `SELECT string_agg(from_status || '>' || to_status, ',' ORDER BY id) FROM status_history WHERE machine = 'coded'`); got != "pending>failed,failed>failed,failed>broken" {
		t.Errorf("history: %s", got)
	}
	if got := b.text(t, `SELECT status || '|' || (attempt_started_at IS NOT NULL) FROM coded WHERE id = 3`); got != "done|true" {
		t.Errorf("record 3 (not in a picked status): %s", got)
	}
	if died, err := coded.DiedDuring(b.ctx, b.pool, []int64{1, 2, 3}); err != nil || join(died) != "1" {
		t.Errorf("died during = %v, %v; want 1", died, err)
	}
	if got, err := coded.FailUnfinished(b.ctx, b.pool, status.UnfinishedParams{Statuses: picked}, c); err != nil || len(got) != 0 {
		t.Errorf("nothing left unfinished: %+v, %v", got, err)
	}
	if _, err := coded.FailUnfinished(b.ctx, b.pool, status.UnfinishedParams{Statuses: []status.Status{done}}, c); !errors.Is(err, status.ErrTransition) {
		t.Errorf("from a status Fail may not leave: %v", err)
	}
}

// TestFailUnfinishedKeepsToItsScope counts one scope value's unfinished attempts only.
func TestFailUnfinishedKeepsToItsScope(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	scoped := *coded
	scoped.Scope = "parent"
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, parent, attempt_started_at) VALUES (1, 'a', now()), (2, 'b', now()), (3, 'a', NULL)`); err != nil {
		t.Fatal(err)
	}
	got, err := scoped.FailUnfinished(b.ctx, b.pool, status.UnfinishedParams{Statuses: []status.Status{pending}, ScopeValue: "a"}, status.Change{Actor: "t"})
	if err != nil || len(got) != 1 || got[0].ID != 1 || got[0].To != failed || got[0].RunID != 0 || strings.Contains(got[0].Reason, "by run") {
		t.Fatalf("scope a: %+v, %v; want record 1 alone, failed, naming no run", got, err)
	}
	if got := b.text(t, `SELECT string_agg(id || status, ',' ORDER BY id) FROM coded`); got != "1failed,2pending,3pending" {
		t.Errorf("records: %s", got)
	}
	// A shard counts its own records only.
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, parent, attempt_started_at) VALUES (4, 'a', now()), (5, 'a', now())`); err != nil {
		t.Fatal(err)
	}
	got, err = scoped.FailUnfinished(b.ctx, b.pool, status.UnfinishedParams{Statuses: []status.Status{pending}, ScopeValue: "a",
		Shard: &status.Shard{Column: "id", Count: 2, Index: 0}}, status.Change{Actor: "t"})
	if err != nil || len(got) != 1 || got[0].ID != 4 {
		t.Errorf("shard 0 of 2: %+v, %v; want record 4 alone", got, err)
	}
}

func (b *testBundle) statusOf(t *testing.T, id int64) status.Status {
	t.Helper()
	return status.Status(b.text(t, `SELECT status FROM coded WHERE id = $1`, id))
}

// TestAttemptStartStoppedMidFlight stops a run while its attempt's start waits on the server (a
// row lock holds it): the start must not land after the caller was told it failed, or the next
// run would count an attempt the stop interrupted as the record's failure.
func TestAttemptStartStoppedMidFlight(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, status) VALUES (1, 'pending')`); err != nil {
		t.Fatal(err)
	}
	holder, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(b.ctx) }()
	if _, err := holder.Exec(b.ctx, `SELECT 1 FROM coded WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := coded.StartAttempt(ctx, b.pool, 1, pending, 9)
		done <- err
	}()
	hung := time.Now().Add(2 * time.Minute) // a bound for a hung test, not a timing claim
	// Wait until the start's UPDATE is blocked on the row lock, then stop the run.
	for b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%SET attempt_started_at = now()%'`) == 0 {
		if time.Now().After(hung) {
			t.Fatal("the start never waited on the row lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := holder.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("start stopped mid-flight = %v, want context.Canceled", err)
	}
	// Whatever the server did with the statement, once it is done no attempt is open.
	for b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE '%SET attempt_started_at = now()%'`) > 0 {
		if time.Now().After(hung) {
			t.Fatal("the start's statement never ended on the server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := b.count(t, `SELECT count(*) FROM coded WHERE attempt_started_at IS NOT NULL`); n != 0 {
		t.Errorf("%d attempts left open by a start the stop interrupted", n)
	}
	if _, err := coded.StartAttempt(ctx, b.pool, 1, pending, 9); !errors.Is(err, context.Canceled) {
		t.Errorf("start after the stop = %v, want context.Canceled without writing", err)
	}
}
