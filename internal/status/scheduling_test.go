package status_test

import (
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
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, status) VALUES (1, 'pending'), (2, 'pending'), (3, 'failed')`); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2} {
		if ok, err := coded.StartAttempt(b.ctx, b.pool, id, pending, 0); err != nil || !ok {
			t.Fatalf("start %d: %v %v", id, ok, err)
		}
	}
	if ok, err := coded.StartAttempt(b.ctx, b.pool, 3, pending, 0); err != nil || ok {
		t.Errorf("start of a record no longer in its status: %v %v", ok, err)
	}
	// A move ends the attempt; so does EndAttempt.
	if _, err := coded.Move(b.ctx, b.pool, 1, pending, done, status.Change{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	u, err := coded.UnfinishedAttempts(b.ctx, b.pool, []status.Status{pending, failed})
	if err != nil || len(u) != 1 || u[0].ID != 2 || u[0].Status != pending || u[0].StartedAt.IsZero() {
		t.Fatalf("unfinished = %+v, %v; want record 2 alone", u, err)
	}
	if err := coded.EndAttempt(b.ctx, b.pool, 2); err != nil {
		t.Fatal(err)
	}
	if u, err := coded.UnfinishedAttempts(b.ctx, b.pool, []status.Status{pending}); err != nil || len(u) != 0 {
		t.Errorf("after EndAttempt: %+v, %v", u, err)
	}
	if _, err := things.StartAttempt(b.ctx, b.pool, 1, pending, 0); err == nil {
		t.Error("start on a machine without InFlight: no error")
	}
}
