package run_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/pgsession"
	"github.com/ingest-dev/ingest/internal/run"
)

// fencedOptions opens a pool fenced as cmd/ingest's, for one process's runs.
func fencedOptions(t *testing.T, url string) run.Options {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	f := &pgsession.Fence{}
	pgsession.ConfigurePool(cfg, pgsession.Defaults(), f)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return run.Options{Pool: pool, Fence: f, Command: "extract things", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		LockCheckInterval: time.Minute} // only the fence stops the old run here, not the lock check
}

// TestRunThatLostItsLockWritesNothingMore: the lock's backend is terminated while a run works
// (a failover, a person's pg_terminate_backend); a second run takes the lock over. The first
// run's next write is refused, it fails saying so, and the abandoned mark the second run gave
// it stays.
func TestRunThatLostItsLockWritesNothingMore(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	ctx := context.Background()
	oldRun, newRun := fencedOptions(t, url), fencedOptions(t, url)
	write := func(ctx context.Context, o run.Options, r *run.Run) error {
		_, err := o.Pool.Exec(ctx, `INSERT INTO status_history (machine, record_id, from_status, to_status, actor, run_id)
VALUES ('things', 1, 'a', 'b', $1, $2)`, r.Actor(), r.ID)
		return err
	}
	var newErr error
	oldErr := run.Exec(ctx, oldRun, func(ctx context.Context, r *run.Run) error {
		if err := write(ctx, oldRun, r); err != nil {
			return err
		}
		if _, err := oldRun.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name LIKE 'ingest extract things (%' AND datname = current_database()`); err != nil {
			return err
		}
		newErr = run.Exec(ctx, newRun, func(ctx context.Context, r *run.Run) error { return write(ctx, newRun, r) })
		// After the takeover. Code that goes on after a failed write (a per-record failure)
		// is stopped all the same: the refused write cancels the run.
		_ = write(ctx, oldRun, r)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Minute): // a bound for a hung test, not a timing claim
			return errors.New("the run was not stopped by its refused write")
		}
	})
	if newErr != nil {
		t.Fatalf("the run that took the lock over: %v", newErr)
	}
	if !errors.Is(oldErr, pgsession.ErrFenced) || !strings.Contains(oldErr.Error(), "took it over") {
		t.Fatalf("the run that lost its lock = %v, want it fenced", oldErr)
	}
	if got := strings.Join(outcomes(t, oldRun.Pool), " "); got != "abandoned succeeded" {
		t.Errorf("outcomes = %s, want abandoned succeeded (the old run leaves the new run's mark)", got)
	}
	var n int
	if err := oldRun.Pool.QueryRow(ctx, `SELECT count(*) FROM status_history`).Scan(&n); err != nil || n != 2 {
		t.Errorf("writes = %d (%v), want 2: the old run's before the takeover and the new run's", n, err)
	}
}

// TestSignalDuringOutcomeRetryStopsAtOnce: a run failed because the database went away and
// retries to record that; a SIGTERM then ends the wait at once, with the signal as the error.
func TestSignalDuringOutcomeRetryStopsAtOnce(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	relay := dbtest.NewRelay(t, url)
	viaRelay, err := pgxpool.New(context.Background(), relay.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer viaRelay.Close()
	o := run.Options{Pool: viaRelay, Command: "extract things", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		RecordTimeout: time.Minute}
	ctx, stop := context.WithCancelCause(context.Background())
	sigterm := errors.New("stopped by terminated")
	var stopped time.Time
	err = run.Exec(ctx, o, func(ctx context.Context, r *run.Run) error {
		relay.Cut()
		time.AfterFunc(500*time.Millisecond, func() { stopped = time.Now(); stop(sigterm) })
		return errors.New("database connection lost")
	})
	took := time.Since(stopped)
	if !errors.Is(err, sigterm) {
		t.Fatalf("run = %v, want the signal", err)
	}
	// Without the signal ending it, the wait would last RecordTimeout (a minute); a third of it
	// leaves a busy machine room and still tells the two apart.
	if took > o.RecordTimeout/3 {
		t.Fatalf("the run ended %s after the signal, want at once", took)
	}
}

// TestFenceOutStopsARunOfAnotherCommand: a run of another command whose lock set excludes this
// one's (bitrix migrate and the entity commands) names this one's lock in FenceOut; once it has
// started, this run, which lost its lock meanwhile, writes nothing more.
func TestFenceOutStopsARunOfAnotherCommand(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	ctx := context.Background()
	oldRun, newRun := fencedOptions(t, url), fencedOptions(t, url)
	newRun.Command, newRun.FenceOut = "migrate things", []string{oldRun.Command}
	write := func(ctx context.Context, o run.Options, r *run.Run) error {
		_, err := o.Pool.Exec(ctx, `INSERT INTO status_history (machine, record_id, from_status, to_status, actor, run_id)
VALUES ('things', 1, 'a', 'b', $1, $2)`, r.Actor(), r.ID)
		return err
	}
	var newErr error
	oldErr := run.Exec(ctx, oldRun, func(ctx context.Context, r *run.Run) error {
		if err := write(ctx, oldRun, r); err != nil {
			return err
		}
		newErr = run.Exec(ctx, newRun, func(ctx context.Context, r *run.Run) error { return write(ctx, newRun, r) })
		_ = write(ctx, oldRun, r)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Minute): // a bound for a hung test, not a timing claim
			return errors.New("the run was not stopped by its refused write")
		}
	})
	if newErr != nil {
		t.Fatalf("the run that fenced the other out: %v", newErr)
	}
	if !errors.Is(oldErr, pgsession.ErrFenced) {
		t.Fatalf("the fenced run = %v, want ErrFenced", oldErr)
	}
	var n int
	if err := oldRun.Pool.QueryRow(ctx, `SELECT count(*) FROM status_history`).Scan(&n); err != nil || n != 2 {
		t.Errorf("writes = %d (%v), want 2: the fenced run's before the other started and the other's", n, err)
	}
}
