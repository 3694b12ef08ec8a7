package status_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// tries is things with a retry schedule: failed waits, broken is where it gives up.
var tries = &status.Machine{
	Name:     "tries",
	Table:    "tries",
	Key:      "key",
	Statuses: things.Statuses,
	Auto:     things.Auto,
	Manual:   things.Manual,
	Retry: &status.Retry{
		Status: failed,
		GiveUp: broken,
		Policy: retry.Policy{Delays: []time.Duration{0, 2 * time.Second, 6 * time.Second}},
	},
}

const triesDDL = `CREATE TABLE tries (
    id bigint PRIMARY KEY,
    key text NOT NULL DEFAULT '',
    parent text,
    status text NOT NULL DEFAULT 'pending',
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    status_changed_at timestamptz NOT NULL DEFAULT now(),
    retries integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz
);`

func setupTries(t *testing.T) *testBundle {
	t.Helper()
	b := setup(t)
	if _, err := b.pool.Exec(b.ctx, triesDDL); err != nil {
		t.Fatalf("create tries: %v", err)
	}
	return b
}

func TestFailFollowsTheSchedule(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id) VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := status.Change{Actor: "test"}

	// Four retryable failures of record 1: three retries after 0 s, 2 s, 6 s, then give up.
	want := []struct {
		to      status.Status
		retries int
		wait    time.Duration
	}{{failed, 1, 0}, {failed, 2, 2 * time.Second}, {failed, 3, 6 * time.Second}, {broken, 3, 0}}
	from := pending
	for i, w := range want {
		out, err := tries.Fail(b.ctx, b.pool, 1, from, status.Failure{Cause: "timeout", Retryable: true, Now: t0}, c)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Moved || out.To != w.to || out.Retries != w.retries {
			t.Fatalf("failure %d: got %+v, want to %s with %d retries", i+1, out, w.to, w.retries)
		}
		if w.to == failed && !out.NextAttemptAt.Equal(t0.Add(w.wait)) {
			t.Errorf("failure %d: next attempt at %v, want %v", i+1, out.NextAttemptAt, t0.Add(w.wait))
		}
		from = out.To
	}
	var lastError string
	var attempts int
	if err := b.pool.QueryRow(b.ctx, `SELECT last_error, attempts FROM tries WHERE id = 1`).Scan(&lastError, &attempts); err != nil {
		t.Fatal(err)
	}
	if lastError != "gave up after 4 attempts: timeout" || attempts != 4 {
		t.Errorf("after giving up: last_error %q, attempts %d", lastError, attempts)
	}

	// A permanent failure gives up at once, whatever the schedule.
	out, err := tries.Fail(b.ctx, b.pool, 2, pending, status.Failure{Cause: "404", Now: t0}, c)
	if err != nil || out.To != broken || out.Reason != "404" {
		t.Fatalf("permanent failure: %+v, %v", out, err)
	}
	// A stale caller (the record is no longer where it saw it) changes nothing.
	out, err = tries.Fail(b.ctx, b.pool, 2, pending, status.Failure{Cause: "late", Retryable: true, Now: t0}, c)
	if err != nil || out.Moved {
		t.Fatalf("stale failure moved: %+v, %v", out, err)
	}
}

func TestFailStartsAfreshAfterLeavingTheRetryStatus(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	c := status.Change{Actor: "test"}
	for range 3 {
		cur, _ := tries.Current(b.ctx, b.pool, 1)
		if _, err := tries.Fail(b.ctx, b.pool, 1, cur, status.Failure{Cause: "x", Retryable: true}, c); err != nil {
			t.Fatal(err)
		}
	}
	// A person sends it back; its next failure is retry 1 again, not a give-up.
	if _, err := tries.MoveMany(b.ctx, b.pool, []int64{1}, failed, pending, status.Change{Actor: "alice", Manual: true}); err != nil {
		t.Fatal(err)
	}
	out, err := tries.Fail(b.ctx, b.pool, 1, pending, status.Failure{Cause: "x", Retryable: true}, c)
	if err != nil || out.To != failed || out.Retries != 1 {
		t.Fatalf("after a manual reset: %+v, %v", out, err)
	}
}

func TestPickDueAndNextDue(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	_, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id, status, next_attempt_at) VALUES
 (1, 'pending', NULL), (2, 'failed', $1), (3, 'failed', $2), (4, 'pending', NULL), (5, 'failed', $3)`,
		t0.Add(-time.Second), t0.Add(time.Minute), t0)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tries.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{pending, failed}, Limit: 10, DueBy: t0})
	if err != nil {
		t.Fatal(err)
	}
	if got := join(ids); got != "1,2,4,5" {
		t.Errorf("due pick = %s, want 1,2,4,5 (3 is due a minute later)", got)
	}
	ids, _ = tries.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{failed}, Limit: 10})
	if got := join(ids); got != "2,3,5" {
		t.Errorf("pick without DueBy = %s, want every failed record", got)
	}
	next, ok, err := tries.NextDue(b.ctx, b.pool, "")
	if err != nil || !ok || !next.Equal(t0.Add(-time.Second)) {
		t.Errorf("next due = %v %v %v", next, ok, err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE tries SET status = 'done'`); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tries.NextDue(b.ctx, b.pool, ""); ok {
		t.Error("next due with nothing waiting")
	}
}

func TestDueCount(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	_, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id, status, next_attempt_at) VALUES
 (1, 'pending', NULL), (2, 'failed', $1), (3, 'failed', $2), (4, 'failed', NULL)`, t0, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := tries.DueCount(b.ctx, b.pool, "", t0); err != nil || n != 2 {
		t.Errorf("due count = %d, %v; want 2 (2 is due now, 4 has no schedule, 3 is due later)", n, err)
	}
}

func TestPickByParentStatus(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	// Parents a (done) and b (failed); children 10..13 of a, b, a, and a missing parent.
	_, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id, key, parent, status) VALUES
 (1, 'a', NULL, 'done'), (2, 'b', NULL, 'failed'),
 (10, 'a1', 'a', 'pending'), (11, 'b1', 'b', 'pending'), (12, 'a2', 'a', 'pending'), (13, 'z1', 'z', 'pending')`)
	if err != nil {
		t.Fatal(err)
	}
	parent := &status.ParentPick{Column: "parent", Machine: tries, Statuses: []status.Status{done}}
	ids, err := tries.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{pending}, Limit: 10, Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	if got := join(ids); got != "10,12" {
		t.Errorf("children of done parents = %s, want 10,12", got)
	}
	// Gone: a child whose parent is not stored at all goes too, one whose parent failed does not.
	parent.Gone = true
	ids, err = tries.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{pending}, Limit: 10, Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	if got := join(ids); got != "10,12,13" {
		t.Errorf("children of done or missing parents = %s, want 10,12,13", got)
	}
}

func join(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

func TestAcknowledgeRecordsAndClearsOnTheNextMove(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	if _, err := b.pool.Exec(b.ctx, `ALTER TABLE tries ADD acknowledged_at timestamptz, ADD acknowledged_by text, ADD acknowledged_reason text;
INSERT INTO tries (id, status) VALUES (1, 'broken'), (2, 'pending')`); err != nil {
		t.Fatal(err)
	}
	m := *tries
	m.Acknowledgeable = []status.Status{broken}
	res, err := m.Acknowledge(b.ctx, b.pool, []int64{1, 2, 3}, "guests are not portal users", "manual: alice")
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[1].Err == nil || !strings.Contains(res[1].Err.Error(), "only records in broken") ||
		!errors.Is(res[2].Err, status.ErrNotFound) {
		t.Fatalf("results %+v: want 1 acknowledged, 2 refused (pending), 3 not found", res)
	}
	var by, reason string
	if err := b.pool.QueryRow(b.ctx, `SELECT acknowledged_by, acknowledged_reason FROM tries WHERE id = 1`).Scan(&by, &reason); err != nil {
		t.Fatal(err)
	}
	if by != "manual: alice" || reason != "guests are not portal users" {
		t.Errorf("acknowledged by %q for %q", by, reason)
	}
	hist, err := m.History(b.ctx, b.pool, 1)
	if err != nil || len(hist) != 1 || hist[0].From != broken || hist[0].To != broken || !strings.Contains(hist[0].Reason, "guests are not portal users") {
		t.Fatalf("history %+v, %v: want the acknowledgement recorded", hist, err)
	}
	if _, err := m.MoveMany(b.ctx, b.pool, []int64{1}, broken, pending, status.Change{Actor: "manual: bob", Manual: true}); err != nil {
		t.Fatal(err)
	}
	var at *time.Time
	if err := b.pool.QueryRow(b.ctx, `SELECT acknowledged_at FROM tries WHERE id = 1`).Scan(&at); err != nil || at != nil {
		t.Errorf("acknowledgement kept after the record moved: %v, %v", at, err)
	}
}
