package run_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/dbtest"
)

// crashWorld is a database holding n crash_items in NEW for testdata/crashchild, fenced as
// every table of the schema.
func crashWorld(t *testing.T, n int) (url string, pool *pgxpool.Pool) {
	t.Helper()
	url = dbtest.URL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, sql := range []string{
		`CREATE TABLE crash_items (id bigint PRIMARY KEY, status text NOT NULL, attempts integer NOT NULL DEFAULT 0,
last_error text, status_changed_at timestamptz NOT NULL DEFAULT now())`,
		`CREATE INDEX ON crash_items (status, id)`,
		`SELECT ingest_fence_table('crash_items')`,
		fmt.Sprintf(`INSERT INTO crash_items (id, status) SELECT g, 'NEW' FROM generate_series(1, %d) g`, n),
	} {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	return url, pool
}

func startCrashChild(t *testing.T, bin, url string, hold, lockCheck time.Duration) *crashtest.Child {
	t.Helper()
	return crashtest.Start(t, bin, "CRASH_DB="+url, "CRASH_HOLD="+hold.String(), "CRASH_LOCK_CHECK="+lockCheck.String())
}

func scalar(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// requireAllMovedOnce checks every record reached DONE and moved exactly once.
func requireAllMovedOnce(t *testing.T, pool *pgxpool.Pool, n int64) {
	t.Helper()
	if done := scalar(t, pool, `SELECT count(*) FROM crash_items WHERE status = 'DONE'`); done != n {
		t.Errorf("records done = %d, want %d", done, n)
	}
	if moves := scalar(t, pool, `SELECT count(*) FROM status_history WHERE machine = 'crash'`); moves != n {
		t.Errorf("moves recorded = %d, want %d (each record once)", moves, n)
	}
}

// frozenBound is how long after a run froze the next one may still find its lock held.
const frozenBound = 4 * time.Minute

// TestFrozenRunDoesNotStallTheNext: a run is frozen inside a transaction (SIGSTOP: a lost node,
// a stalled VM; its connections stay open and silent), holding row locks and its lock. With
// the production bounds the server ends its sessions, and the next run, retried as a CronJob's
// ticks would, gets the lock and finishes (within frozenBound). The frozen run, thawed, writes
// nothing more and leaves the abandoned mark.
func TestFrozenRunDoesNotStallTheNext(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the production dead-peer bounds (about 45 s)")
	}
	const n = 200
	bin := crashtest.Build(t, "./testdata/crashchild")
	url, pool := crashWorld(t, n)

	frozen := startCrashChild(t, bin, url, 2*time.Second, time.Second)
	frozen.WaitPhase(t, "tx", 2*time.Minute)
	frozen.Freeze(t)
	at := time.Now()
	if idle := scalar(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
AND state = 'idle in transaction'`); idle != 1 {
		t.Fatalf("sessions idle in transaction after the freeze = %d, want the frozen run's", idle)
	}

	tries := 0
	for {
		tries++
		next := startCrashChild(t, bin, url, 0, time.Second)
		code := next.Wait(t)
		if code == 0 {
			break
		}
		if code != 75 {
			t.Fatalf("next run exited %d after %s:\n%s", code, time.Since(at), next.Stderr())
		}
		// Without the dead-peer bounds (about 45 s) the frozen run would hold its lock until
		// thawed; the bound leaves a busy machine room for the tries and still tells them apart.
		if time.Since(at) > frozenBound {
			t.Fatalf("the next run still finds the lock held %s after the freeze", time.Since(at))
		}
		time.Sleep(2 * time.Second) // the next tick
	}
	took := time.Since(at)
	t.Logf("the next run finished %s after the freeze (%d tries)", took.Round(time.Second), tries)
	if took > frozenBound {
		t.Fatalf("the next run finished %s after the freeze, want within %s", took, frozenBound)
	}
	requireAllMovedOnce(t, pool, n)

	frozen.Thaw(t)
	if code := frozen.Wait(t); code != 1 {
		t.Errorf("thawed run exited %d, want 1:\n%s", code, frozen.Stderr())
	}
	requireAllMovedOnce(t, pool, n)
	if got := strings.Join(outcomes(t, pool), " "); got != "abandoned succeeded" {
		t.Errorf("outcomes = %s, want abandoned succeeded", got)
	}
}

// TestRunWhoseLockBackendIsTerminatedWritesNothingMore: the lock's backend of a working run is
// terminated (pg_terminate_backend, a failover); a new run takes the lock over at once. The old
// run checks its lock only once a minute here, so only the fence stops it: from the takeover
// on, none of its writes commits, it exits 1 saying so, and the new run exits 0 with every
// record moved once.
func TestRunWhoseLockBackendIsTerminatedWritesNothingMore(t *testing.T) {
	t.Parallel()
	const n = 3000
	bin := crashtest.Build(t, "./testdata/crashchild")
	url, pool := crashWorld(t, n)

	old := startCrashChild(t, bin, url, 5*time.Millisecond, time.Minute)
	old.WaitPhase(t, "tx", 2*time.Minute)
	if k := scalar(t, pool, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND application_name LIKE $1`, fmt.Sprintf("ingest crash things (%% pid %d)", old.Pid())); k != 1 {
		t.Fatalf("lock backends terminated = %d, want 1", k)
	}
	next := startCrashChild(t, bin, url, 0, time.Second)
	next.WaitPhase(t, "run", 2*time.Minute)
	// The new run is its lock's recorded holder: what the old run wrote until now is all it writes.
	oldRun := scalar(t, pool, `SELECT min(id) FROM runs`)
	wrote := scalar(t, pool, `SELECT count(*) FROM status_history WHERE run_id = $1`, oldRun)
	if code := next.Wait(t); code != 0 {
		t.Fatalf("the run that took the lock over exited %d:\n%s", code, next.Stderr())
	}
	if code := old.Wait(t); code != 1 || !strings.Contains(old.Stderr(), "this run commits nothing more") {
		t.Fatalf("the run that lost its lock exited %d, want 1 with the fence's error:\n%s", code, old.Stderr())
	}
	if after := scalar(t, pool, `SELECT count(*) FROM status_history WHERE run_id = $1`, oldRun); after != wrote || wrote == n {
		t.Errorf("old run's moves: %d at the takeover, %d at the end (of %d), want none after it and some left", wrote, after, n)
	}
	requireAllMovedOnce(t, pool, n)
	if got := strings.Join(outcomes(t, pool), " "); got != "abandoned succeeded" {
		t.Errorf("outcomes = %s, want abandoned succeeded", got)
	}
}
