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
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/pgsession"
	"github.com/ingest-dev/ingest/internal/retry"
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
	// Fence, when set, is the fence of Pool's connections (pgsession.ConfigurePool): once the
	// run is recorded as its lock's holder, every write on Pool commits only while it still is.
	// A run always records itself as the holder, fenced or not, so that it fences out the
	// runs before it.
	Fence *pgsession.Fence
	// Command names the command, e.g. "extract habr": it labels the run and, unless LockName
	// is set, keys the lock.
	Command string
	// LockName keys the lock when commands share one (e.g. every phase of a Bitrix24 entity).
	LockName string
	// AlsoLocks are more locks the run takes with its own, all or none (status.LockOptions.Also):
	// a lock several commands share in shared mode and one takes exclusive keeps that one apart
	// from all of them.
	AlsoLocks []status.SetLock
	// FenceOut names more locks this run records itself the holder of, as of its own: the runs
	// that held them commit nothing more (pgsession.Fence). A run whose lock set excludes other
	// commands names their locks here, so that one of them that lost its locks (frozen, cut
	// off) cannot write beside it once it started (bitrix migrate and the entity commands).
	FenceOut []string
	// FenceOutPrefixes are FenceOut for families of locks: every lock recorded in run_locks
	// whose name starts with one of them (an unsharded social sync fences out the shards of
	// every count, "social sync shard ").
	FenceOutPrefixes []string
	// Log receives the run's lines; each carries run_id and cmd.
	Log *slog.Logger
	// PushgatewayURL, when set, receives the run's metrics at the end.
	PushgatewayURL string
	// MetricsTextfile, when set, is written with the run's metrics at the end: that file, or
	// ingest_<command>.prom in it when it is a directory (metrics.TextfileFor).
	MetricsTextfile string
	// LockCheckInterval is how often the lock connection is checked; 5s when zero.
	LockCheckInterval time.Duration
	// DeadPeerTimeout is how long the server keeps the lock once this process goes silent
	// (status.LockOptions); status.DefaultDeadPeerTimeout when zero, and never less than three
	// lock checks.
	DeadPeerTimeout time.Duration
	// Records is what the command owns of the pipelines' state machines, counted into
	// ingest_records at the end of every run.
	Records []Owned
	// RecordTimeout bounds how long a run that cannot reach the database at its end keeps
	// trying to record its outcome (a database restarting, a failover); 30s when zero. A signal
	// ends the wait at once.
	RecordTimeout time.Duration
}

// abandonedError is what a run still marked running is labelled with by the next run of its
// command. Both causes leave the same trace (no outcome, the lock gone with its connection), so
// the label names both rather than guessing; a run that knew why it ended logged it.
const abandonedError = "no outcome was recorded: the process was killed (SIGKILL, out of memory, node lost) " +
	"or could not reach the database to record how it ended; its log says which"

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
	o.MetricsTextfile = metrics.TextfileFor(o.MetricsTextfile, o.Command)
	lockName := o.LockName
	if lockName == "" {
		lockName = o.Command
	}
	interval := o.LockCheckInterval
	if interval == 0 {
		interval = 5 * time.Second
	}
	dead := o.DeadPeerTimeout
	if dead == 0 {
		dead = status.DefaultDeadPeerTimeout
	}
	lock, err := status.AcquireLockWith(ctx, o.Pool.Config().ConnConfig, lockName,
		status.LockOptions{DeadPeerTimeout: max(dead, 3*interval), Also: o.AlsoLocks})
	if err != nil {
		return err
	}
	defer func() {
		if err := lock.Release(ctx); err != nil {
			o.Log.Warn("release run lock", "error", err)
		}
	}()

	r := &Run{Command: o.Command, Metrics: metrics.New()}
	abandoned, err := start(ctx, o, lockName, r)
	if err != nil {
		return err
	}
	if o.Fence != nil {
		o.Fence.Hold(lockName, r.ID)
	}
	r.Log = o.Log.With("run_id", r.ID)
	if abandoned > 0 {
		r.Log.Warn("earlier runs of this command ended without recording an outcome; marked abandoned", "runs", abandoned)
	}
	r.Log.Info("run started")
	start := time.Now()
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	if err := r.Metrics.Start(sctx, o.PushgatewayURL, o.MetricsTextfile, r.Command); err != nil {
		r.Log.Warn("run start not published to the metrics", "error", err)
	}
	scancel()

	runCtx, cancel := context.WithCancelCause(ctx)
	if o.Fence != nil {
		// A write the fence refused stops the run at once, whatever the code that wrote does next.
		o.Fence.OnFenced(func(err error) {
			if runCtx.Err() == nil {
				r.Log.Error("run lock taken over by a later run; stopping", "error", err)
			}
			cancel(err)
		})
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
	countRecords(runCtx, o, r)
	cancel(nil)
	<-watched

	outcome := Succeeded
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// Stopped from outside (SIGTERM, SIGINT): whatever fn returned, that is the story.
		outcome, err = Interrupted, context.Cause(ctx)
	case runCtx.Err() != nil && (errors.Is(context.Cause(runCtx), status.ErrLockLost) || errors.Is(context.Cause(runCtx), pgsession.ErrFenced)):
		outcome, err = Failed, context.Cause(runCtx)
	default:
		outcome, err = Failed, pgsession.Explain(err)
	}
	r.Metrics.Finish(outcome == Succeeded)
	finish(ctx, o, r, outcome, err, time.Since(start))
	if ctx.Err() != nil {
		// A signal, maybe while the outcome was being recorded: it decides the exit code.
		return context.Cause(ctx)
	}
	if outcome == Failed {
		return &Error{RunID: r.ID, Err: err}
	}
	return err
}

// start records the run and its lock's new holder in one transaction, and marks abandoned the
// runs of the command still marked running: holding the lock proves none of them is alive
// (kill -9, OOM, node loss). The claim waits for the write transactions the lock's previous
// holder still has open, and fences out any later one (pgsession.Fence).
func start(ctx context.Context, o Options, lockName string, r *Run) (abandoned int64, err error) {
	err = pgx.BeginFunc(ctx, o.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET outcome = $2, finished_at = now(), error = $3
WHERE command = $1 AND outcome = 'running'`, o.Command, Abandoned, abandonedError)
		if err != nil {
			return fmt.Errorf("record abandoned runs: %w", pgsession.Explain(err))
		}
		abandoned = tag.RowsAffected()
		if err := tx.QueryRow(ctx, "INSERT INTO runs (command) VALUES ($1) RETURNING id", o.Command).Scan(&r.ID); err != nil {
			return fmt.Errorf("record run: %w", pgsession.Explain(err))
		}
		for _, name := range append([]string{lockName}, o.FenceOut...) {
			if err := pgsession.Claim(ctx, tx, name, r.ID); err != nil {
				return err
			}
		}
		for _, prefix := range o.FenceOutPrefixes {
			if err := pgsession.ClaimPrefixed(ctx, tx, prefix, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	return abandoned, err
}

// PublishFailedStart publishes the metrics of a run of o.Command that failed before it could
// start, because the database could not be reached: a completion without success, so that
// ingest_last_completion_timestamp_seconds moves while the staleness alert keeps its series (the
// last success comes from the textfile an earlier run wrote). Nothing reaches the database.
func PublishFailedStart(ctx context.Context, o Options) {
	o.MetricsTextfile = metrics.TextfileFor(o.MetricsTextfile, o.Command)
	m := metrics.New()
	m.Finish(false)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if o.PushgatewayURL != "" {
		if err := m.Push(ctx, o.PushgatewayURL, o.Command); err != nil {
			o.Log.Warn("metrics not pushed", "error", err)
		}
	}
	if o.MetricsTextfile != "" {
		last, err := metrics.ReadLastSuccess(o.MetricsTextfile)
		if err != nil {
			o.Log.Warn("last success not read from the metrics textfile", "error", err)
		}
		m.KeepLastSuccess(last)
		if err := m.WriteTextfile(o.MetricsTextfile, o.Command); err != nil {
			o.Log.Warn("metrics textfile not written", "error", err)
		}
	}
}

// Error is a failed run's error. The run has already logged it with its counters.
type Error struct {
	RunID int64
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("run %d failed: %v", e.RunID, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// finish records the outcome and publishes the metrics; it must work after a cancelled run. A
// signal that arrives meanwhile cuts it short: the process is stopping.
func finish(ctx context.Context, o Options, r *Run, outcome string, runErr error, took time.Duration) {
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx) // interrupted already: record that, within the bounds below
	}
	counters := r.Metrics.Snapshot()
	recordOutcome(ctx, o, r, outcome, runErr, counters)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if o.PushgatewayURL != "" {
		if err := r.Metrics.Push(pctx, o.PushgatewayURL, r.Command); err != nil {
			r.Log.Warn("metrics not pushed", "error", err)
		}
	}
	if o.MetricsTextfile != "" {
		if outcome != Succeeded {
			r.Metrics.KeepLastSuccess(lastSuccess(pctx, o, r))
		}
		if err := r.Metrics.WriteTextfile(o.MetricsTextfile, r.Command); err != nil {
			r.Log.Warn("metrics textfile not written", "error", err)
		}
	}
	attrs := []any{"outcome", outcome, "duration_s", took.Seconds()}
	// The counters in a stable order; a migration has hundreds of them.
	for _, k := range slices.Sorted(maps.Keys(counters)) {
		attrs = append(attrs, k, counters[k])
	}
	switch outcome {
	case Succeeded:
		r.Log.Info("run finished", attrs...)
	case Interrupted:
		r.Log.Warn("run interrupted; a rerun continues where it stopped", append(attrs, "cause", runErr)...)
	default:
		// The error is the message, first on the line: the counters that follow make it long.
		r.Log.Error(fmt.Sprintf("run failed: %v", runErr), attrs...)
	}
}

// interruptedRecordTimeout bounds the recording of an interrupted run's outcome: a process
// asked to stop does not wait for a database that does not answer.
const interruptedRecordTimeout = 2 * time.Second

// recordOutcome stores the run's outcome, counters and error. A database that is down at that
// moment (the outage that may have failed the run) is retried until o.RecordTimeout, so that a
// short outage does not leave the run to be labelled abandoned by the next one; a signal ends
// the retries at once (ctx), and the next run labels it abandoned, as after a SIGKILL.
//
// Only a run still marked running is updated: a run that lost its lock may already be marked
// abandoned by the run that took it over, and that mark stays.
func recordOutcome(ctx context.Context, o Options, r *Run, outcome string, runErr error, counters map[string]float64) {
	limit := o.RecordTimeout
	if limit == 0 {
		limit = 30 * time.Second
	}
	if outcome == Interrupted {
		limit = min(limit, interruptedRecordTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	raw, _ := json.Marshal(counters)
	var errText *string
	if runErr != nil {
		s := runErr.Error()
		errText = &s
	}
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		tag, err := o.Pool.Exec(actx, `UPDATE runs SET outcome = $2, finished_at = now(), counters = $3, error = $4
WHERE id = $1 AND outcome = 'running'`, r.ID, outcome, raw, errText)
		acancel()
		if err == nil {
			switch {
			case tag.RowsAffected() == 0:
				r.Log.Warn("run outcome not recorded: a later run took the lock over and marked this run abandoned", "outcome", outcome)
			case attempt > 1:
				r.Log.Info("run outcome recorded once the database answered again", "outcome", outcome, "attempts", attempt)
			}
			return
		}
		if attempt == 1 {
			r.Log.Warn("cannot record the run's outcome; retrying", "outcome", outcome, "for_s", limit.Seconds(), "error", err)
		}
		if retry.Sleep(ctx, pause) != nil {
			why := "gave up"
			if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
				why = cause.Error()
			}
			r.Log.Error("run outcome not recorded: the next run of this command will label it abandoned",
				"outcome", outcome, "attempts", attempt, "stopped", why, "error", err)
			return
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// lastSuccess is when the command last succeeded, for a textfile written by a run that did not:
// from the runs table, or from the textfile an earlier run wrote when the database cannot say
// (it may be why this run failed).
func lastSuccess(ctx context.Context, o Options, r *Run) time.Time {
	var fromDB *time.Time
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := o.Pool.QueryRow(qctx, `SELECT max(finished_at) FROM runs WHERE command = $1 AND outcome = $2`,
		r.Command, Succeeded).Scan(&fromDB); err != nil {
		r.Log.Warn("last success not read from the database; keeping the textfile's", "error", err)
	}
	fromFile, err := metrics.ReadLastSuccess(o.MetricsTextfile)
	if err != nil {
		r.Log.Warn("last success not read from the metrics textfile", "error", err)
	}
	if fromDB != nil && fromDB.After(fromFile) {
		return *fromDB
	}
	return fromFile
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

// Recent returns the latest runs, newest first: of the given commands (a run named with a
// suffix, like "social sync run shard 0/4", counts as its command's), or of all when none are
// given. A run still marked running whose process is gone (its lock is free: kill -9, out of
// memory, node lost) is returned as abandoned, with that said in its error, as the next run of
// its command will record it.
func Recent(ctx context.Context, db status.Querier, commands []string, limit int) ([]Row, error) {
	rows, err := db.Query(ctx, `SELECT id, command, started_at, finished_at, outcome, counters, coalesce(error, '')
FROM runs WHERE coalesce(cardinality($1::text[]), 0) = 0
    OR EXISTS (SELECT 1 FROM unnest($1::text[]) c WHERE command = c OR starts_with(command, c || ' '))
ORDER BY id DESC LIMIT $2`, commands, limit)
	if err != nil {
		return nil, fmt.Errorf("recent runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return nil, fmt.Errorf("recent runs: %w", err)
	}
	if err := markGone(ctx, db, out); err != nil {
		return nil, fmt.Errorf("recent runs: %w", err)
	}
	return out, nil
}

func scanRow(r pgx.CollectableRow) (Row, error) {
	var x Row
	err := r.Scan(&x.ID, &x.Command, &x.StartedAt, &x.FinishedAt, &x.Outcome, &x.Counters, &x.Error)
	return x, err
}

// goneError is what a run still marked running says once its lock shows its process is gone.
const goneError = "the process is gone: its run lock is free and no outcome was recorded (killed, out of memory, " +
	"node lost, or the database unreachable as it ended); the next run of this command records it abandoned"

// markGone shows as abandoned the runs still marked running that no longer hold their lock.
// Their rows are read again after the look at the locks: a run records its outcome before it
// gives its lock back, so one that ended meanwhile shows its outcome, and one still marked
// running without its lock has no process left to record one.
func markGone(ctx context.Context, db status.Querier, runs []Row) error {
	var running []int64
	for _, r := range runs {
		if r.Outcome == "running" {
			running = append(running, r.ID)
		}
	}
	if len(running) == 0 {
		return nil
	}
	live, err := status.LiveRuns(ctx, db, running)
	if err != nil {
		return err
	}
	var gone []int64
	for _, id := range running {
		if !live[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	rows, err := db.Query(ctx, `SELECT id, command, started_at, finished_at, outcome, counters, coalesce(error, '')
FROM runs WHERE id = ANY($1)`, gone)
	if err != nil {
		return err
	}
	now, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return err
	}
	byID := map[int64]Row{}
	for _, r := range now {
		if r.Outcome == "running" {
			r.Outcome, r.Error = Abandoned, goneError
		}
		byID[r.ID] = r
	}
	for i, r := range runs {
		if x, ok := byID[r.ID]; ok {
			runs[i] = x
		}
	}
	return nil
}
