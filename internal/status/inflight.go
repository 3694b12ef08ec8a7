package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/retry"
)

// An attempt in flight is one a process has begun and not yet recorded an outcome for. A machine
// with InFlight records its start, committed before the work, so that a process that dies during
// the attempt (killed, out of memory) leaves a trace the next run counts as a failed attempt
// (FailUnfinished) instead of retrying forever a record that kills whoever tries it. Every move
// ends the attempt.

// AttemptUnfinished is the reason code (Change.Code) of the failed attempt FailUnfinished records
// for an attempt whose process died before recording its outcome.
const AttemptUnfinished = "attempt_unfinished"

// StartAttempt records, committed by the caller, that an attempt at record id begins in run
// runID (0 for none). It reports false when the record is no longer in status in, the status it
// was picked in.
func (m *Machine) StartAttempt(ctx context.Context, db DB, id int64, in Status, runID int64) (bool, error) {
	started, err := m.StartAttempts(ctx, db, []int64{id}, []Status{in}, runID)
	return len(started) == 1, err
}

// StartAttempts is StartAttempt for a batch worked as one (sent in one request), in one
// statement: it returns the ids still in one of the statuses in, whose attempt began.
func (m *Machine) StartAttempts(ctx context.Context, db DB, ids []int64, in []Status, runID int64) ([]int64, error) {
	if !m.InFlight {
		return nil, fmt.Errorf("%s records no attempts in flight", m.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The start runs to its answer whatever happens to ctx: given up mid-flight, the statement
	// may still commit on the server after the caller, told it failed, has ended the attempts it
	// knew of, and the open attempt left behind is counted by the next run as the record's failure
	// (FailUnfinished), though only the stop interrupted it.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptWriteTimeout)
	defer cancel()
	rows, err := db.Query(wctx, fmt.Sprintf(`UPDATE %s SET attempt_started_at = now(), attempt_run_id = NULLIF($3, 0)
WHERE id = ANY($1) AND `+statusExpr+` = ANY($2) RETURNING id`, m.table()), ids, statusNames(in), runID)
	if err != nil {
		return nil, fmt.Errorf("start attempts at %s %v: %w", m.Name, ids, err)
	}
	started, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("start attempts at %s %v: %w", m.Name, ids, err)
	}
	if err := ctx.Err(); err != nil {
		// Stopped while the start was written: the attempts are ended here, so that no caller
		// has to tell a start that failed from one that landed.
		if aerr := m.EndAttempts(wctx, db, started); aerr != nil {
			return nil, errors.Join(err, aerr)
		}
		return nil, err
	}
	return started, nil
}

// attemptWriteTimeout bounds the writes of an attempt's start and end that a stop does not
// cancel (StartAttempts, AbandonAttempts).
const attemptWriteTimeout = 5 * time.Second

// Attempt runs fn as one attempt at record id, picked in status in, its start committed before
// fn runs; it reports false, without running fn, when the record has left in since. An attempt
// that fn's outcome left open is ended unrecorded when fn returns nil (the record was left for
// later) or the run stops (ctx ended): neither is the record's fault. When fn fails otherwise
// the attempt stays open, and the next run counts it (FailUnfinished), as it does when the
// process dies during fn.
func (m *Machine) Attempt(ctx context.Context, db DB, id int64, in Status, runID int64, fn func() error) (bool, error) {
	started, err := m.StartAttempt(ctx, db, id, in, runID)
	if err != nil || !started {
		return false, err
	}
	err = fn()
	if err == nil || ctx.Err() != nil {
		if aerr := m.AbandonAttempts(ctx, db, []int64{id}); aerr != nil && err == nil {
			err = aerr
		}
	}
	return true, err
}

// EndAttempt clears an attempt that ends without a move (the run is stopping, or the record is
// left for later): it is not held against the record.
func (m *Machine) EndAttempt(ctx context.Context, db DB, id int64) error {
	return m.EndAttempts(ctx, db, []int64{id})
}

// EndAttempts is EndAttempt for many records; records whose attempt a move already ended are
// not written again.
func (m *Machine) EndAttempts(ctx context.Context, db DB, ids []int64) error {
	if !m.InFlight {
		return fmt.Errorf("%s records no attempts in flight", m.Name)
	}
	if _, err := db.Exec(ctx, fmt.Sprintf(`UPDATE %s SET attempt_started_at = NULL, attempt_run_id = NULL
WHERE id = ANY($1) AND attempt_started_at IS NOT NULL`, m.table()), ids); err != nil {
		return fmt.Errorf("end attempts at %s %v: %w", m.Name, ids, err)
	}
	return nil
}

// AbandonAttempts ends the attempts of a run that is stopping (SIGINT, SIGTERM: ctx is
// cancelled) before recording their outcomes: a stop is not the records' fault. It runs on a
// context of its own that the stop does not cancel; if it fails anyway, the next run counts the
// attempts, which costs each record one retry.
func (m *Machine) AbandonAttempts(ctx context.Context, db DB, ids []int64) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptWriteTimeout)
	defer cancel()
	return m.EndAttempts(cctx, db, ids)
}

// UnfinishedParams selects the unfinished attempts FailUnfinished counts.
type UnfinishedParams struct {
	// Statuses are the statuses the pipeline picks records in for an attempt (the ones it
	// starts attempts in).
	Statuses []Status
	// ScopeValue limits the records to one value of Machine.Scope (required when it has one).
	ScopeValue string
	// Shard, when set, limits the records to the run's shard. Whatever the shard, the attempts
	// of a run that still holds its lock are never counted: they are in flight (a sharded and
	// an unsharded run hold different locks and may run at once).
	Shard *Shard
	// Now is when the run starts (zero: time.Now()); Policy, when it has Delays, replaces the
	// machine's schedule (see Failure).
	Now    time.Time
	Policy retry.Policy
}

// Unfinished is an attempt whose process died before recording its outcome, and where
// FailUnfinished moved its record.
type Unfinished struct {
	Outcome
	ID        int64
	From      Status // the status the attempt started in
	StartedAt time.Time
	RunID     int64 // 0 when the attempt named no run
}

// unfinishedCause is the cause stored for an unfinished attempt: when and by which run it began,
// so that an operator can look at that run's log.
const unfinishedCause = `format('attempt started %%s%%s never finished: the process died during it ` +
	`(killed, out of memory or its node lost)',
    to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
    CASE WHEN run_id <> 0 THEN ' by run ' || run_id ELSE '' END)`

// FailUnfinished records every attempt an ended run started and never finished as a failed
// attempt (code AttemptUnfinished), through the machine's retry schedule, in one statement: its
// process died during it (killed, out of memory, node lost). Counting them is what lets a record
// that kills the process every time end in Retry.GiveUp, "gave up after N attempts: attempt started ... never
// finished: the process died during it", rather than block every later run. Every pipeline whose machine
// has InFlight calls it as its run starts, before it picks; it returns the records it moved, in
// id order.
func (m *Machine) FailUnfinished(ctx context.Context, db DB, p UnfinishedParams, c Change) ([]Unfinished, error) {
	if !m.InFlight {
		return nil, nil
	}
	f := Failure{Retryable: true, Now: p.Now, Policy: p.Policy, Code: AttemptUnfinished}
	for _, s := range p.Statuses {
		if err := m.checkFail(s, f, c); err != nil {
			return nil, err
		}
	}
	sel := failSelection{where: "attempt_started_at IS NOT NULL AND status = ANY($%d)", cause: unfinishedCause,
		args: []any{statusNames(p.Statuses)}}
	if m.Scope != "" {
		sel.where += fmt.Sprintf(" AND %s = $%%d", pgx.Identifier{m.Scope}.Sanitize())
		sel.args = append(sel.args, p.ScopeValue)
	}
	if p.Shard != nil {
		if err := p.Shard.Validate(); err != nil {
			return nil, fmt.Errorf("count the unfinished attempts at %s: %w", m.Name, err)
		}
		sel.where += fmt.Sprintf(" AND %s %%%% $%%d = $%%d", pgx.Identifier{p.Shard.Column}.Sanitize())
		sel.args = append(sel.args, p.Shard.Count, p.Shard.Index)
	}
	// Only attempts of runs that ended (or of no run): the attempts of a run that still holds
	// its lock are in flight (inflight_live.go).
	ended, err := m.endedRuns(ctx, db, numbered(sel.where), sel.args)
	if err != nil {
		return nil, fmt.Errorf("count the unfinished attempts at %s %s: %w", m.Name, p.ScopeValue, err)
	}
	sel.where += " AND (attempt_run_id IS NULL OR attempt_run_id = ANY($%d))"
	sel.args = append(sel.args, append([]int64{}, ended...))
	out, err := m.fail(ctx, db, sel, f, c)
	if err != nil {
		return nil, fmt.Errorf("count the unfinished attempts at %s %s: %w", m.Name, p.ScopeValue, err)
	}
	res := make([]Unfinished, len(out))
	for i, x := range out {
		res[i] = Unfinished{Outcome: x.Outcome, ID: x.ID, From: x.From, RunID: x.RunID}
		if x.StartedAt != nil {
			res[i].StartedAt = *x.StartedAt
		}
	}
	return res, nil
}

// DiedDuring returns the ids among ids whose last failure was an attempt that never finished
// (code AttemptUnfinished), in id order: a pipeline that works records in batches sends each of
// them alone, so that a record that kills the process again is the only one it is counted
// against, not its batch-mates. It needs ReasonCodes (without, it returns none).
func (m *Machine) DiedDuring(ctx context.Context, db DB, ids []int64) ([]int64, error) {
	if !m.InFlight || !m.ReasonCodes || len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT id FROM %s WHERE id = ANY($1) AND reason_code = $2 ORDER BY id`, m.table()),
		ids, AttemptUnfinished)
	if err != nil {
		return nil, fmt.Errorf("attempts that died at %s %v: %w", m.Name, ids, err)
	}
	died, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("attempts that died at %s %v: %w", m.Name, ids, err)
	}
	return died, nil
}
