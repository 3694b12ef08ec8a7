package status

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// A machine whose Acknowledgeable lists statuses needs three columns for acknowledgements:
//
//	acknowledged_at     timestamptz
//	acknowledged_by     text
//	acknowledged_reason text
//
// Any later move of the record clears them: an acknowledgement covers the failure it was given
// for, not the next one.

// Acknowledge marks records as accepted exceptions (a person's "this one cannot be migrated, and
// that is known": who, why, when), each in its own transaction, recording the
// acknowledgement in the status history (from and to its current status). Only records in one of
// Machine.Acknowledgeable may be acknowledged; a record acknowledged already gets the new reason.
func (m *Machine) Acknowledge(ctx context.Context, db Beginner, ids []int64, reason, actor string) ([]SetResult, error) {
	if len(m.Acknowledgeable) == 0 {
		return nil, fmt.Errorf("%s records cannot be acknowledged", m.Name)
	}
	out := make([]SetResult, 0, len(ids))
	for _, id := range ids {
		res := SetResult{ID: id}
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			var cur string
			err := tx.QueryRow(ctx, fmt.Sprintf("SELECT status FROM %s WHERE id = $1 FOR UPDATE", m.table()), id).Scan(&cur)
			if errors.Is(err, pgx.ErrNoRows) {
				res.Err = fmt.Errorf("%s record %d: %w", m.Name, id, ErrNotFound)
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s record %d: %w", m.Name, id, err)
			}
			res.From = Status(cur)
			if !slices.Contains(m.Acknowledgeable, res.From) {
				res.Err = fmt.Errorf("record %d is %s: only records in %s can be acknowledged", id, res.From, joinStatuses(m.Acknowledgeable))
				return nil
			}
			_, err = tx.Exec(ctx, fmt.Sprintf(`WITH acked AS (
    UPDATE %s SET acknowledged_at = now(), acknowledged_by = $2, acknowledged_reason = $3 WHERE id = $1 RETURNING id, status
)
INSERT INTO status_history (machine, record_id, from_status, to_status, reason, actor)
SELECT $4, id, status, status, 'acknowledged as a known exception: ' || $3, $5 FROM acked`, m.table()),
				id, actor, reason, m.Name, actor)
			if err != nil {
				return fmt.Errorf("acknowledge %s record %d: %w", m.Name, id, err)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}
