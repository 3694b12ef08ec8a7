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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
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
}
