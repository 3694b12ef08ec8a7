package status

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// An attempt in flight is one a process has begun and not yet recorded an outcome for. A machine
// with InFlight records its start, committed before the work, so that a process that dies during
// the attempt (killed, out of memory) leaves a trace the next run can count as a failed attempt
// instead of retrying forever a record that kills whoever tries it. Every move ends the attempt.

// StartAttempt records, committed by the caller, that an attempt at record id begins in run
// runID (0 for none). It reports false when the record is no longer in status in, the status it
// was picked in.
func (m *Machine) StartAttempt(ctx context.Context, db DB, id int64, in Status, runID int64) (bool, error) {
	if !m.InFlight {
		return false, fmt.Errorf("%s records no attempts in flight", m.Name)
	}
	tag, err := db.Exec(ctx, fmt.Sprintf(`UPDATE %s SET attempt_started_at = now(), attempt_run_id = NULLIF($3, 0)
WHERE id = $1 AND status = $2`, m.table()), id, string(in), runID)
	if err != nil {
		return false, fmt.Errorf("start attempt at %s %d: %w", m.Name, id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// EndAttempt clears an attempt that ends without a move (the run is stopping): it is not held
// against the record.
func (m *Machine) EndAttempt(ctx context.Context, db DB, id int64) error {
	if !m.InFlight {
		return fmt.Errorf("%s records no attempts in flight", m.Name)
	}
	if _, err := db.Exec(ctx, fmt.Sprintf(`UPDATE %s SET attempt_started_at = NULL, attempt_run_id = NULL WHERE id = $1`, m.table()), id); err != nil {
		return fmt.Errorf("end attempt at %s %d: %w", m.Name, id, err)
	}
	return nil
}

// Unfinished is an attempt whose process died before recording its outcome.
type Unfinished struct {
	ID        int64
	Status    Status
	StartedAt time.Time
	RunID     int64 // 0 when the attempt named no run
}

// UnfinishedAttempts lists the records in one of statuses with an attempt that never finished,
// in id order.
func (m *Machine) UnfinishedAttempts(ctx context.Context, db DB, statuses []Status) ([]Unfinished, error) {
	if !m.InFlight {
		return nil, nil
	}
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT id, status, attempt_started_at, coalesce(attempt_run_id, 0) FROM %s
WHERE attempt_started_at IS NOT NULL AND status = ANY($1) ORDER BY id`, m.table()), statusNames(statuses))
	if err != nil {
		return nil, fmt.Errorf("unfinished attempts at %s: %w", m.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Unfinished, error) {
		var u Unfinished
		var st string
		err := r.Scan(&u.ID, &st, &u.StartedAt, &u.RunID)
		u.Status = Status(st)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("unfinished attempts at %s: %w", m.Name, err)
	}
	return out, nil
}
