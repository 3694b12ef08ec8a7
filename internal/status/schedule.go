package status

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/retry"
)

// Retry is a machine's retry scheduling: a record whose attempt failed for a reason that may pass
// (a timeout, a 503) waits in Status until its next attempt is due, and moves to GiveUp when the
// failure is permanent or the schedule's retries are used up.
//
// A machine with Retry needs two more columns in its table:
//
//	retries           integer NOT NULL DEFAULT 0  -- retries used since the record entered Status
//	next_attempt_at   timestamptz                 -- when the next attempt is due (in Status only)
//
// Only Fail writes them, and both are read only while the record is in Status: a record that
// leaves Status by any other move (success, a person's fix, a changed source record) starts its
// retries afresh the next time it fails.
type Retry struct {
	// Status is where a retryable failure waits for its next attempt (ERROR_RETRY,
	// extract_failed).
	Status Status
	// GiveUp is where a permanent failure, or one whose retries are used up, goes
	// (IMPORT_ERR, extract_broken).
	GiveUp Status
	// Policy is the schedule: Policy.Delays[i] before retry i+1, plus jitter; its length is the
	// number of retries after the first attempt.
	Policy retry.Policy
}

// Failure describes one failed attempt at a record.
type Failure struct {
	// Cause says what went wrong; it becomes the record's last_error (prefixed with "gave up
	// after N attempts: " when the retries are used up).
	Cause string
	// Retryable marks a failure that may pass by itself: it is retried on the schedule. Any
	// other failure goes to Retry.GiveUp at once.
	Retryable bool
	// Now is when the attempt failed; the next attempt is due at Now plus the schedule's delay.
	// Zero means time.Now().
	Now time.Time
	// Policy, when it has Delays, replaces the machine's schedule for this failure (tests and
	// operators shorten or lengthen it).
	Policy retry.Policy
	// Code classifies the cause for programs (see Change.Code); empty for none.
	Code string
}

// Outcome is where Fail moved a record.
type Outcome struct {
	// Moved is false when the record was no longer in the status the caller saw (another move got
	// there first): nothing changed.
	Moved bool
	// To is the record's new status: Retry.Status or Retry.GiveUp.
	To Status
	// Retries counts the retries used, this one included when To is Retry.Status.
	Retries int
	// NextAttemptAt is when the record is due again (zero unless To is Retry.Status).
	NextAttemptAt time.Time
	// Reason is what was stored as last_error.
	Reason string
}

// Fail records a failed attempt at record id, guarded by its current status from (see Move): a
// retryable failure with retries left moves the record to Retry.Status with its next attempt
// scheduled; anything else moves it to Retry.GiveUp. One statement reads the retries used, moves
// the record, writes the retry count and the next attempt's time and records the history, so a
// crash never leaves a record waiting without a schedule, and two failures of the same record
// racing each other count both.
func (m *Machine) Fail(ctx context.Context, db DB, id int64, from Status, f Failure, c Change) (Outcome, error) {
	if err := m.checkFail(from, f, c); err != nil {
		return Outcome{}, err
	}
	out, err := m.fail(ctx, db, failSelection{where: "id = $%d AND status = $%d", cause: "$%d::text", args: []any{id, string(from), f.Cause}}, f, c)
	if err != nil {
		return Outcome{}, fmt.Errorf("fail %s %d: %w", m.Name, id, err)
	}
	if len(out) == 0 {
		return Outcome{}, nil
	}
	return out[0].Outcome, nil
}

// checkFail refuses a failure the machine cannot record from status from: which of Retry.Status
// and Retry.GiveUp it becomes depends on the retries used, read by the statement, so both must be
// allowed when both may happen.
func (m *Machine) checkFail(from Status, f Failure, c Change) error {
	if m.Retry == nil {
		return fmt.Errorf("%s: Fail needs a machine with a retry schedule", m.Name)
	}
	if f.Retryable && m.policy(f).MaxRetries() > 0 {
		if err := m.check(from, m.Retry.Status, c.Manual); err != nil {
			return err
		}
	}
	return m.check(from, m.Retry.GiveUp, c.Manual)
}

func (m *Machine) policy(f Failure) retry.Policy {
	if f.Policy.Delays != nil {
		return f.Policy
	}
	return m.Retry.Policy
}

// failSelection is which records a fail statement fails and why: where is the condition on the
// table's rows and cause the SQL expression of each one's cause (it may read the row and the
// retries used, as used). Both hold one %d per argument in args, numbered by fail.
type failSelection struct {
	where, cause string
	args         []any
}

// failed is one record a fail statement moved.
type failed struct {
	Outcome
	ID        int64
	From      Status
	StartedAt *time.Time // the unfinished attempt's start (FailUnfinished)
	RunID     int64
}

// fail records a failed attempt at every record sel selects, in one statement: it reads the
// retries used, moves each record, writes the retry count and the next attempt's time and
// records the history, so a crash never leaves a record waiting without a schedule, and two
// failures of the same record racing each other count both.
func (m *Machine) fail(ctx context.Context, db DB, sel failSelection, f Failure, c Change) ([]failed, error) {
	policy := m.policy(f)
	retries := 0
	if f.Retryable {
		retries = policy.MaxRetries()
	}
	now := f.Now
	if now.IsZero() {
		now = time.Now()
	}
	// The next attempt's time for each retry that may be the next one: retry n is due at
	// next[n-1].
	next := make([]time.Time, retries)
	for i := range next {
		next[i] = now.Add(policy.Delay(i + 1))
	}
	c.Code, c.Attempt = f.Code, true
	args := []any{string(m.Retry.Status), string(m.Retry.GiveUp), retries, f.Retryable, next, m.Name, c.Actor, c.RunID}
	side, sideArgs := m.sideColumns(c, len(args)+1)
	args = append(args, sideArgs...)
	nums := make([]any, len(sel.args))
	for i, a := range sel.args {
		args = append(args, a)
		nums[i] = len(args)
	}
	// The selection's placeholders are numbered in the order where, then cause, uses them.
	nWhere := strings.Count(sel.where, "%d")
	where, cause := fmt.Sprintf(sel.where, nums[:nWhere]...), fmt.Sprintf(sel.cause, nums[nWhere:]...)
	inFlight := "NULL::timestamptz AS started_at, 0::bigint AS run_id"
	if m.InFlight {
		inFlight = "attempt_started_at AS started_at, coalesce(attempt_run_id, 0) AS run_id"
	}
	sql := fmt.Sprintf(`
WITH cur AS (
    SELECT id, status AS from_status, CASE WHEN status = $1 THEN retries ELSE 0 END AS used, %[3]s
    FROM %[1]s WHERE %[4]s FOR UPDATE
), plan AS (
    SELECT id, from_status, used, used < $3::int AS again, started_at, run_id, %[5]s AS cause
    FROM cur
), planned AS (
    SELECT *, CASE WHEN again THEN cause
             WHEN $4::boolean THEN format('gave up after %%s attempts: %%s', used + 1, cause)
             ELSE cause END AS reason
    FROM plan
), moved AS (
    UPDATE %[1]s r SET status = CASE WHEN p.again THEN $1 ELSE $2 END, attempts = r.attempts + 1,
        last_error = NULLIF(p.reason, ''), status_changed_at = now(),
        retries = CASE WHEN p.again THEN p.used + 1 ELSE p.used END,
        next_attempt_at = CASE WHEN p.again THEN ($5::timestamptz[])[p.used + 1] END%[2]s
    FROM planned p WHERE r.id = p.id AND r.status = p.from_status
    RETURNING r.id, p.from_status, r.status, r.retries, r.next_attempt_at, p.reason, p.started_at, p.run_id
), logged AS (
    INSERT INTO status_history (machine, record_id, from_status, to_status, reason, actor, run_id)
    SELECT $6, id, from_status, status, reason, $7, NULLIF($8, 0) FROM moved
)
SELECT id, from_status, status, retries, next_attempt_at, reason, started_at, run_id FROM moved ORDER BY id`,
		m.table(), side, inFlight, where, cause)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (failed, error) {
		var x failed
		var from, to string
		var at *time.Time
		err := r.Scan(&x.ID, &from, &to, &x.Retries, &at, &x.Reason, &x.StartedAt, &x.RunID)
		x.From, x.Moved, x.To = Status(from), true, Status(to)
		if at != nil {
			x.NextAttemptAt = *at
		}
		return x, err
	})
}

// ParentPick limits a pick to child records whose parent is in one of Statuses: memberships
// whose workgroup was imported, messages whose chat was, comments whose post was.
type ParentPick struct {
	// Column is the child's column holding its parent's key (e.g. "parent_source_id").
	Column string
	// Machine is the parent's machine (the child's own when both share a table); the parent is
	// found by Machine.Key (or id when it has none) within ScopeValue.
	Machine *Machine
	// ScopeValue is the parent's value of Machine.Scope (e.g. "groups"), when it has one.
	ScopeValue string
	// Statuses are the parent statuses that let a child be picked (e.g. IMPORT_OK).
	Statuses []Status
	// Optional lets records without a parent (Column NULL) be picked too: for references of a
	// record to another of its own kind (a task's parent task), where a root names none.
	Optional bool
	// Gone lets records whose parent is not stored at all be picked too: the caller knows the
	// source will not show it (a complete read never saw it), so the child goes without the link.
	Gone bool
}

// condition is the SQL condition on child alias r, with its arguments numbered from next.
func (p *ParentPick) condition(next int) (string, []any) {
	pm := p.Machine
	key := "id"
	if pm.Key != "" {
		key = pgx.Identifier{pm.Key}.Sanitize()
	}
	args := []any{statusNames(p.Statuses)}
	cond := fmt.Sprintf("EXISTS (SELECT 1 FROM %s p WHERE p.%s = r.%s AND p.status = ANY($%d)",
		pm.table(), key, pgx.Identifier{p.Column}.Sanitize(), next)
	if pm.Scope != "" {
		args = append(args, p.ScopeValue)
		cond += fmt.Sprintf(" AND p.%s = $%d", pgx.Identifier{pm.Scope}.Sanitize(), next+1)
	}
	cond += ")"
	if p.Gone {
		gone := fmt.Sprintf("NOT EXISTS (SELECT 1 FROM %s p WHERE p.%s = r.%s", pm.table(), key, pgx.Identifier{p.Column}.Sanitize())
		if pm.Scope != "" {
			gone += fmt.Sprintf(" AND p.%s = $%d", pgx.Identifier{pm.Scope}.Sanitize(), next+1)
		}
		cond = "(" + cond + " OR " + gone + "))"
	}
	if p.Optional {
		cond = fmt.Sprintf("(r.%s IS NULL OR %s)", pgx.Identifier{p.Column}.Sanitize(), cond)
	}
	return cond, args
}

// NextDue returns when the next record waiting in Retry.Status (within scope, for scoped
// machines) comes due; ok is false when none waits.
func (m *Machine) NextDue(ctx context.Context, db DB, scopeValue string) (next time.Time, ok bool, err error) {
	if m.Retry == nil {
		return time.Time{}, false, nil
	}
	where, args := "status = $1", []any{string(m.Retry.Status)}
	if m.Scope != "" {
		where += fmt.Sprintf(" AND %s = $2", pgx.Identifier{m.Scope}.Sanitize())
		args = append(args, scopeValue)
	}
	var n int64
	var at *time.Time
	err = db.QueryRow(ctx, fmt.Sprintf("SELECT count(*), min(next_attempt_at) FROM %s WHERE %s",
		m.table(), where), args...).Scan(&n, &at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due %s: %w", m.Name, err)
	}
	switch {
	case n == 0:
		return time.Time{}, false, nil
	case at == nil: // waiting without a schedule (written before there was one): due now
		return time.Time{}, true, nil
	}
	return *at, true, nil
}

// DueCount returns how many records wait in Retry.Status (within scope, for scoped machines)
// with their next attempt due at by: the retries a run started at by will make.
func (m *Machine) DueCount(ctx context.Context, db DB, scopeValue string, by time.Time) (int64, error) {
	if m.Retry == nil {
		return 0, nil
	}
	where, args := "status = $1 AND coalesce(next_attempt_at, '-infinity') <= $2", []any{string(m.Retry.Status), by}
	if m.Scope != "" {
		where += fmt.Sprintf(" AND %s = $3", pgx.Identifier{m.Scope}.Sanitize())
		args = append(args, scopeValue)
	}
	var n int64
	if err := db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", m.table(), where), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("due count %s: %w", m.Name, err)
	}
	return n, nil
}

func statusNames(ss []Status) []string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return names
}
