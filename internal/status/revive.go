package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ReviveParams selects failed records whose cause has passed, by the code of their failure.
type ReviveParams struct {
	// ScopeValue limits the records to one value of Machine.Scope (required when it has one).
	ScopeValue string
	// From is the status they failed into; To the one they go back to.
	From, To Status
	// Code is the Change.Code (Failure.Code) of the failure that passed.
	Code string
	// Parent, when set, revives only records whose parent is in one of its statuses now.
	Parent *ParentPick
	// Change is the move's reason and actor.
	Change Change
}

// Revive moves the records in p.From that failed with p.Code (and, with p.Parent, whose parent
// now is in one of its statuses) to p.To, and returns the ids that moved. A person's
// acknowledgement of such a failure is left alone: acknowledged records stay. The machine needs
// ReasonCodes.
func (m *Machine) Revive(ctx context.Context, db DB, p ReviveParams) ([]int64, error) {
	if !m.ReasonCodes {
		return nil, fmt.Errorf("%s records keep no reason codes to revive them by", m.Name)
	}
	args := []any{string(p.From), p.Code}
	where := "r.status = $1 AND r.reason_code = $2"
	if m.Scope != "" {
		args = append(args, p.ScopeValue)
		where += fmt.Sprintf(" AND r.%s = $%d", pgx.Identifier{m.Scope}.Sanitize(), len(args))
	}
	if len(m.Acknowledgeable) > 0 {
		where += " AND r.acknowledged_at IS NULL"
	}
	if p.Parent != nil {
		cond, more := p.Parent.condition(len(args) + 1)
		args = append(args, more...)
		where += " AND " + cond
	}
	rows, err := db.Query(ctx, fmt.Sprintf("SELECT r.id FROM %s r WHERE %s ORDER BY r.id", m.table(), where), args...)
	if err != nil {
		return nil, fmt.Errorf("find %s records to revive (%s): %w", m.Name, p.Code, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		if err != nil {
			err = fmt.Errorf("find %s records to revive (%s): %w", m.Name, p.Code, err)
		}
		return nil, err
	}
	return m.MoveMany(ctx, db, ids, p.From, p.To, p.Change)
}

// ResetSchedule clears the schedule of records (their retries used and when they are next due),
// for records whose source changed: the next failure starts a fresh schedule and a waiting record
// is due at once.
func (m *Machine) ResetSchedule(ctx context.Context, db DB, ids []int64) error {
	set := "next_attempt_at = NULL"
	switch {
	case m.Retry != nil:
		set = "retries = 0, " + set
	case len(m.Waiting) == 0:
		return nil // no schedule kept
	}
	_, err := db.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s WHERE id = ANY($1)", m.table(), set), ids)
	if err != nil {
		return fmt.Errorf("reset the schedule of %d %s records: %w", len(ids), m.Name, err)
	}
	return nil
}
