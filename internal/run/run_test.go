package run_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

func setup(t *testing.T) (*pgxpool.Pool, run.Options) {
	t.Helper()
	pool := dbtest.Pool(t)
	return pool, run.Options{Pool: pool, Command: "extract things", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func outcomes(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := run.Recent(context.Background(), pool, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(rows) - 1; i >= 0; i-- {
		out = append(out, rows[i].Outcome)
	}
	return out
}

func TestExecRecordsOutcomes(t *testing.T) {
	t.Parallel()
	pool, o := setup(t)
	ctx := context.Background()
	o.MetricsTextfile = filepath.Join(t.TempDir(), "ingest.prom")

	err := run.Exec(ctx, o, func(ctx context.Context, r *run.Run) error {
		r.Metrics.Processed.WithLabelValues("things", "done").Add(3)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = run.Exec(ctx, o, func(ctx context.Context, r *run.Run) error { return boom })
	var runErr *run.Error
	if !errors.As(err, &runErr) || !errors.Is(err, boom) {
		t.Fatalf("failed run = %v, want *run.Error wrapping the cause", err)
	}
	stopCtx, stop := context.WithCancelCause(ctx)
	sig := errors.New("stopped by terminated")
	err = run.Exec(stopCtx, o, func(ctx context.Context, r *run.Run) error {
		stop(sig)
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, sig) {
		t.Fatalf("stopped run = %v, want the stop's cause", err)
	}
	if got := strings.Join(outcomes(t, pool), " "); got != "succeeded failed interrupted" {
		t.Errorf("outcomes = %s", got)
	}
	rows, _ := run.Recent(ctx, pool, []string{"extract things"}, 10)
	if c := rows[2].Counters["records_processed_total{entity=things,outcome=done}"]; c != 3 {
		t.Errorf("counters of the first run = %v", rows[2].Counters)
	}
	if rows[1].Error != "boom" {
		t.Errorf("error of the failed run = %q", rows[1].Error)
	}
	if b, err := os.ReadFile(o.MetricsTextfile); err != nil || !strings.Contains(string(b), "ingest_last_completion_timestamp_seconds") {
		t.Errorf("metrics textfile: %v\n%s", err, b)
	}
}

func TestExecMarksDeadRunsAbandonedAndRespectsLock(t *testing.T) {
	t.Parallel()
	pool, o := setup(t)
	ctx := context.Background()
	// A run that died without a word.
	if _, err := pool.Exec(ctx, "INSERT INTO runs (command) VALUES ('extract things')"); err != nil {
		t.Fatal(err)
	}
	err := run.Exec(ctx, o, func(ctx context.Context, r *run.Run) error {
		// While this run holds the lock, another one is refused without being recorded.
		err := run.Exec(ctx, o, func(context.Context, *run.Run) error {
			t.Error("second run started")
			return nil
		})
		if !errors.Is(err, status.ErrLocked) {
			t.Errorf("nested run = %v, want ErrLocked", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(outcomes(t, pool), " "); got != "abandoned succeeded" {
		t.Errorf("outcomes = %s, want abandoned succeeded", got)
	}
	// Nothing tells a killed process from one that could not reach the database at its end:
	// the label names both instead of blaming a kill.
	rows, _ := run.Recent(ctx, pool, nil, 10)
	if e := rows[1].Error; !strings.Contains(e, "killed") || !strings.Contains(e, "could not reach the database") {
		t.Errorf("abandoned run's error = %q", e)
	}
}

// TestOutcomeRecordedAfterDatabaseOutage: the database goes away mid-run and comes back while
// the failed run is ending. The run records its own outcome and cause once it can, instead of
// leaving a `running` row for the next run to label abandoned.
func TestOutcomeRecordedAfterDatabaseOutage(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	relay := dbtest.NewRelay(t, url)
	ctx := context.Background()
	viaRelay, err := pgxpool.New(ctx, relay.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer viaRelay.Close()
	o := run.Options{Pool: viaRelay, Command: "extract things", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		LockCheckInterval: 50 * time.Millisecond, RecordTimeout: 2 * time.Minute}
	outage := errors.New("fetch page: database connection lost")
	err = run.Exec(ctx, o, func(ctx context.Context, r *run.Run) error {
		relay.Cut()
		// The database is back a moment later, while the run is recording its end.
		time.AfterFunc(time.Second, relay.Resume)
		return outage
	})
	if !errors.As(err, new(*run.Error)) {
		t.Fatalf("run = %v, want a failed run", err)
	}
	direct, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	rows, err := run.Recent(ctx, direct, nil, 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("runs = %v, %v", rows, err)
	}
	// The lock connection died with the outage too: either cause is the run's own account.
	if r := rows[0]; r.Outcome != run.Failed || r.FinishedAt == nil ||
		(r.Error != outage.Error() && !strings.Contains(r.Error, "lost the run lock")) {
		t.Errorf("run after the outage = %+v, want failed with its cause", r)
	}
}

// TestFailedRunKeepsLastSuccess: a failed run rewrites the textfile with the last success
// still in it, and every series names its command, so the staleness alert keeps its series
// and several commands' files can share node-exporter's directory.
func TestFailedRunKeepsLastSuccess(t *testing.T) {
	t.Parallel()
	pool, o := setup(t)
	ctx := context.Background()
	o.MetricsTextfile = filepath.Join(t.TempDir(), "extract_things.prom")
	if err := run.Exec(ctx, o, func(context.Context, *run.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var succeeded time.Time
	if err := pool.QueryRow(ctx, "SELECT finished_at FROM runs WHERE outcome = 'succeeded'").Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		_ = run.Exec(ctx, o, func(context.Context, *run.Run) error { return errors.New("boom") })
	}
	last, err := metrics.ReadLastSuccess(o.MetricsTextfile)
	// The textfile holds float seconds: equal to the microsecond.
	if err != nil || last.Sub(succeeded).Abs() > time.Millisecond {
		t.Errorf("last success after two failed runs = %v (%v), want %v", last, err, succeeded)
	}
	b, _ := os.ReadFile(o.MetricsTextfile)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(line, "#") && !strings.Contains(line, `command="extract_things"`) {
			t.Errorf("series without the command label: %s", line)
		}
	}
}
