package run_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/pgsession"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// TestRecentShowsGoneRunsAbandoned: a run still marked running is shown running while its lock
// is held, and abandoned, with why, once the lock is free (its process died: the server freed the
// lock with the session), before any later run of its command has marked it so.
func TestRecentShowsGoneRunsAbandoned(t *testing.T) {
	t.Parallel()
	pool, o := setup(t)
	ctx := context.Background()
	// Another command's run, as its process records itself: the lock first, then the run and
	// its claim on the lock.
	lock, err := status.AcquireLock(ctx, pool.Config().ConnConfig, "discover things")
	if err != nil {
		t.Fatal(err)
	}
	var other int64
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "INSERT INTO runs (command) VALUES ('discover things') RETURNING id").Scan(&other); err != nil {
			return err
		}
		return pgsession.Claim(ctx, tx, "discover things", other)
	})
	if err != nil {
		t.Fatal(err)
	}
	outcomeOf := func(id int64) run.Row {
		t.Helper()
		rows, err := run.Recent(ctx, pool, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.ID == id {
				return r
			}
		}
		t.Fatalf("run %d not listed", id)
		return run.Row{}
	}
	if r := outcomeOf(other); r.Outcome != "running" {
		t.Errorf("run holding its lock = %s, want running", r.Outcome)
	}
	var self int64
	err = run.Exec(ctx, o, func(ctx context.Context, r *run.Run) error {
		self = r.ID
		if got := outcomeOf(r.ID); got.Outcome != "running" {
			t.Errorf("the live run itself = %s, want running", got.Outcome)
		}
		// kill -9: the session ends, and the server frees its lock; nothing records an outcome.
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := outcomeOf(other)
		if got.Outcome != run.Abandoned || !strings.Contains(got.Error, "the process is gone") {
			t.Errorf("run whose lock is free = %s (%q), want abandoned, saying its process is gone", got.Outcome, got.Error)
		}
		if got := outcomeOf(r.ID); got.Outcome != "running" {
			t.Errorf("the live run beside a gone one = %s, want running", got.Outcome)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The row itself is left for the next run of its command to mark.
	var stored string
	if err := pool.QueryRow(ctx, "SELECT outcome FROM runs WHERE id = $1", other).Scan(&stored); err != nil || stored != "running" {
		t.Errorf("stored outcome = %q (%v), want running until its command runs again", stored, err)
	}
	if got := outcomeOf(self); got.Outcome != run.Succeeded {
		t.Errorf("finished run = %s", got.Outcome)
	}
}
