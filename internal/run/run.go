// Package run wraps one execution of a command: it takes the command's advisory lock, records
// the run in the runs table, stops the work when the lock is lost or a signal arrives, and at
// the end records the outcome and counters, publishes the metrics and releases the lock.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/status"
)

// Outcomes stored in runs.outcome.
const (
	Succeeded   = "succeeded"
	Failed      = "failed"
	Interrupted = "interrupted"
	Abandoned   = "abandoned"
)

// Options configure Exec.
type Options struct {
	// Pool is the database. Its config is copied for the lock's own connection.
	Pool *pgxpool.Pool
	// Command names the command, e.g. "extract habr": it labels the run and, unless LockName
	// is set, keys the lock.
	Command string
	// LockName keys the lock when commands share one (e.g. every phase of a Bitrix24 entity).
	LockName string
	// Log receives the run's lines; each carries run_id and cmd.
	Log *slog.Logger
	// PushgatewayURL, when set, receives the run's metrics at the end.
	PushgatewayURL string
	// MetricsTextfile, when set, is written with the run's metrics at the end.
	MetricsTextfile string
	// LockCheckInterval is how often the lock connection is checked; 5s when zero.
	LockCheckInterval time.Duration
}

// Run is one execution of a command.
type Run struct {
	// ID is the row in the runs table.
	ID int64
	// Command is the command's name.
	Command string
	// Log is the run's logger.
	Log *slog.Logger
	// Metrics is the run's metrics registry.
	Metrics *metrics.Metrics
}

// Actor names the run in status_history: "run 42 (extract habr)".
func (r *Run) Actor() string { return fmt.Sprintf("run %d (%s)", r.ID, r.Command) }

// Exec runs fn as one run of o.Command. It returns fn's error; status.ErrLocked (wrapped) when
// another run of the same command holds the lock, in which case nothing is recorded or done;
// and the context's cause when the run was stopped.
func Exec(ctx context.Context, o Options, fn func(ctx context.Context, r *Run) error) error {
	lockName := o.LockName
	if lockName == "" {
		lockName = o.Command
	}
	lock, err := status.AcquireLock(ctx, o.Pool.Config().ConnConfig, lockName)
	if err != nil {
		return err
	}
	defer func() {
		if err := lock.Release(ctx); err != nil {
			o.Log.Warn("release run lock", "error", err)
		}
	}()

	// Holding the lock proves no other run of this command is alive: any run still marked
	// running died without a word (kill -9, OOM, node loss).
	tag, err := o.Pool.Exec(ctx, `UPDATE runs SET outcome = $2, finished_at = now(),
error = 'the process ended without recording an outcome (killed, out of memory or node lost)'
WHERE command = $1 AND outcome = 'running'`, o.Command, Abandoned)
	if err != nil {
		return fmt.Errorf("record abandoned runs: %w", err)
	}
	r := &Run{Command: o.Command, Metrics: metrics.New()}
	if err := o.Pool.QueryRow(ctx, "INSERT INTO runs (command) VALUES ($1) RETURNING id", o.Command).Scan(&r.ID); err != nil {
		return fmt.Errorf("record run: %w", err)
	}
	r.Log = o.Log.With("run_id", r.ID)
	if n := tag.RowsAffected(); n > 0 {
		r.Log.Warn("earlier runs of this command died without finishing; marked abandoned", "runs", n)
	}
	r.Log.Info("run started")
	start := time.Now()

	runCtx, cancel := context.WithCancelCause(ctx)
	interval := o.LockCheckInterval
	if interval == 0 {
		interval = 5 * time.Second
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		lock.Watch(runCtx, interval, func(err error) {
			r.Log.Error("run lock lost; stopping", "error", err)
			cancel(err)
		})
	}()
	err = fn(runCtx, r)
	if err == nil && runCtx.Err() != nil {
		err = context.Cause(runCtx)
	}
	cancel(nil)
	<-watched

	outcome := Succeeded
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// Stopped from outside (SIGTERM, SIGINT): whatever fn returned, that is the story.
		outcome, err = Interrupted, context.Cause(ctx)
	case runCtx.Err() != nil && errors.Is(context.Cause(runCtx), status.ErrLockLost):
		outcome, err = Failed, context.Cause(runCtx)
	default:
		outcome = Failed
	}
	r.Metrics.Finish(outcome == Succeeded)
	finish(ctx, o, r, outcome, err, time.Since(start))
	if outcome == Failed {
		return &Error{RunID: r.ID, Err: err}
	}
	return err
}

// Error is a failed run's error. The run has already logged it with its counters.
type Error struct {
	RunID int64
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("run %d failed: %v", e.RunID, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// finish records the outcome and publishes the metrics; it must work after a cancelled run.
func finish(ctx context.Context, o Options, r *Run, outcome string, runErr error, took time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	counters := r.Metrics.Snapshot()
	raw, _ := json.Marshal(counters)
	var errText *string
	if runErr != nil {
		s := runErr.Error()
		errText = &s
	}
	if _, err := o.Pool.Exec(ctx, `UPDATE runs SET outcome = $2, finished_at = now(), counters = $3, error = $4 WHERE id = $1`,
		r.ID, outcome, raw, errText); err != nil {
		r.Log.Error("record run outcome", "error", err)
	}
	if o.PushgatewayURL != "" {
		if err := r.Metrics.Push(ctx, o.PushgatewayURL, r.Command); err != nil {
			r.Log.Warn("metrics not pushed", "error", err)
		}
	}
	if o.MetricsTextfile != "" {
		if err := r.Metrics.WriteTextfile(o.MetricsTextfile); err != nil {
			r.Log.Warn("metrics textfile not written", "error", err)
		}
	}
	attrs := []any{"outcome", outcome, "duration_s", took.Seconds()}
	for k, v := range counters {
		attrs = append(attrs, k, v)
	}
	switch outcome {
	case Succeeded:
		r.Log.Info("run finished", attrs...)
	case Interrupted:
		r.Log.Warn("run interrupted; a rerun continues where it stopped", append(attrs, "cause", runErr)...)
	default:
		r.Log.Error("run failed", append(attrs, "error", runErr)...)
	}
}

// Row is one recorded run.
type Row struct {
	ID         int64
	Command    string
	StartedAt  time.Time
	FinishedAt *time.Time
	Outcome    string
	Counters   map[string]float64
	Error      string
}

// Recent returns the latest runs, newest first: of the given commands, or of all when none
// are given.
func Recent(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, commands []string, limit int) ([]Row, error) {
	rows, err := db.Query(ctx, `SELECT id, command, started_at, finished_at, outcome, counters, coalesce(error, '')
FROM runs WHERE coalesce(cardinality($1::text[]), 0) = 0 OR command = ANY($1) ORDER BY id DESC LIMIT $2`, commands, limit)
	if err != nil {
		return nil, fmt.Errorf("recent runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		var x Row
		err := r.Scan(&x.ID, &x.Command, &x.StartedAt, &x.FinishedAt, &x.Outcome, &x.Counters, &x.Error)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("recent runs: %w", err)
	}
	return out, nil
}
