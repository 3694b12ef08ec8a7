package pgsession_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/pgsession"
)

// pool opens a pool on a new database with bounds b and fence f, as cmd/ingest does.
func pool(t testing.TB, url string, b pgsession.Bounds, f *pgsession.Fence) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pgsession.ConfigurePool(cfg, b, f)
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// claim records run as the holder of lock, as run.Exec does.
func claim(t testing.TB, db *pgxpool.Pool, lock string, run int64) {
	t.Helper()
	err := pgx.BeginFunc(context.Background(), db, func(tx pgx.Tx) error { return pgsession.Claim(context.Background(), tx, lock, run) })
	if err != nil {
		t.Fatal(err)
	}
}

func TestEveryConnectionCarriesTheBounds(t *testing.T) {
	t.Parallel()
	p := pool(t, dbtest.URL(t), pgsession.Defaults(), nil)
	ctx := context.Background()
	want := map[string]string{"idle_in_transaction_session_timeout": "30s", "lock_timeout": "2min",
		"statement_timeout": "10min", "idle_session_timeout": "0"}
	// Two connections at once: each one sets them, not only the first.
	a, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	for _, c := range []*pgxpool.Conn{a, b} {
		for name, v := range want {
			var got string
			if err := c.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != v {
				t.Errorf("%s = %s, want %s", name, got, v)
			}
		}
	}
}

func TestBlockedStatementSaysWhatItWaitedOn(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	ctx := context.Background()
	holder := pool(t, url, pgsession.Bounds{}, nil)
	p := pool(t, url, pgsession.Bounds{Lock: 200 * time.Millisecond}, nil)
	if _, err := holder.Exec(ctx, `INSERT INTO run_locks (name, run_id) VALUES ('x', 1)`); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE run_locks SET run_id = 2`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Exec(ctx, `UPDATE run_locks SET run_id = 3`)
	err = pgsession.Explain(err)
	if err == nil || !strings.Contains(err.Error(), "waited longer than lock_timeout") || !strings.Contains(err.Error(), `relation "run_locks"`) {
		t.Fatalf("blocked update: %v, want a lock timeout naming run_locks", err)
	}
	// lock_timeout ended the wait: without it the update would wait as long as the holder. The
	// bound is for a busy machine, far from both.
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("blocked update took %s", took)
	}
}

func TestFenceRefusesTheWritesOfARunThatLostItsLock(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	ctx := context.Background()
	oldFence, newFence := &pgsession.Fence{}, &pgsession.Fence{}
	oldRun, newRun := pool(t, url, pgsession.Bounds{}, oldFence), pool(t, url, pgsession.Bounds{}, newFence)
	person := pool(t, url, pgsession.Bounds{}, nil)
	write := func(db *pgxpool.Pool, actor string) error {
		_, err := db.Exec(ctx, `INSERT INTO status_history (machine, record_id, from_status, to_status, actor)
VALUES ('m', 1, 'a', 'b', $1)`, actor)
		return err
	}

	claim(t, oldRun, "extract things", 1)
	oldFence.Hold("extract things", 1)
	if err := write(oldRun, "old"); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}

	// A transaction of the old run open while the new run claims the lock: the claim waits
	// for it, and what it wrote before the takeover stays.
	tx, err := oldRun.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO status_history (machine, record_id, from_status, to_status, actor)
VALUES ('m', 2, 'a', 'b', 'old, in flight')`); err != nil {
		t.Fatal(err)
	}
	claimed := make(chan time.Time)
	go func() {
		claim(t, newRun, "extract things", 2)
		claimed <- time.Now()
	}()
	// Commit once the claim waits on the transaction (a fixed pause let a slow machine commit
	// before the claim was even sent, and the test proved nothing).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var waiting bool
		if err := person.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new run's claim never waited on the old run's open transaction")
		}
	}
	committed := time.Now()
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("the old run's transaction open before the takeover: %v", err)
	}
	if at := <-claimed; at.Before(committed) {
		t.Fatal("the new run's claim did not wait for the old run's open transaction")
	}
	newFence.Hold("extract things", 2)

	err = write(oldRun, "old, after the takeover")
	if !errors.Is(pgsession.Explain(err), pgsession.ErrFenced) || !strings.Contains(pgsession.Explain(err).Error(), "run 2 took it over") {
		t.Fatalf("old run's write after the takeover: %v, want it fenced, naming run 2", pgsession.Explain(err))
	}
	// Every write path is fenced, a transaction's later statements too.
	err = pgx.BeginFunc(ctx, oldRun, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM status_history`)
		return err
	})
	if !errors.Is(pgsession.Explain(err), pgsession.ErrFenced) {
		t.Fatalf("old run's delete: %v, want it fenced", err)
	}
	if err := write(newRun, "new"); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}
	if err := write(person, "manual: alice"); err != nil {
		t.Fatalf("a session without a run (a person's status set): %v", err)
	}
	var actors []string
	rows, _ := person.Query(ctx, `SELECT actor FROM status_history ORDER BY id`)
	actors, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(actors, "|"); got != "old|old, in flight|new|manual: alice" {
		t.Fatalf("rows written: %s", got)
	}
}

// TestEveryTableIsFenced fails when a migration creates a table a run writes without fencing it.
func TestEveryTableIsFenced(t *testing.T) {
	t.Parallel()
	p := pool(t, dbtest.URL(t), pgsession.Bounds{}, nil)
	rows, _ := p.Query(context.Background(), `SELECT c.relname FROM pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND c.relname NOT IN ('runs', 'run_locks', 'goose_db_version')
  AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = 'ingest_fence')
ORDER BY 1`)
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("tables without the run fence: %v; add `SELECT ingest_fence_table('NAME');` to the migration that creates them", missing)
	}
	var n int
	if err := p.QueryRow(context.Background(), `SELECT count(*) FROM pg_trigger WHERE tgname = 'ingest_fence'`).Scan(&n); err != nil || n < 20 {
		t.Fatalf("fenced tables: %d (%v), want every table of the schema", n, err)
	}
}
