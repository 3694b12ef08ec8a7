package status

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Beginner starts transactions: a *pgxpool.Pool or a *pgx.Conn.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// SetResult is what happened to one record of a manual status change.
type SetResult struct {
	ID   int64
	From Status // empty when the record does not exist
	// Err is nil when the record moved (or already was in the target status), and explains the
	// refusal otherwise: no such record, or a move the machine does not allow by hand.
	Err error
}

// ErrNotFound is returned (wrapped, in SetResult.Err) for an id with no record.
var ErrNotFound = errors.New("no such record")

// SetManual moves each record to status to by hand, recording actor and reason in the history.
// Each record is checked and moved in its own transaction, so one refused id never blocks the
// others; a record already in status to is left alone and reported as done.
func (m *Machine) SetManual(ctx context.Context, db Beginner, ids []int64, to Status, reason, actor string) ([]SetResult, error) {
	out := make([]SetResult, 0, len(ids))
	for _, id := range ids {
		res, err := m.setOne(ctx, db, id, to, reason, actor)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

func (m *Machine) setOne(ctx context.Context, db Beginner, id int64, to Status, reason, actor string) (SetResult, error) {
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
		if res.From == to {
			return nil
		}
		if err := m.check(res.From, to, true); err != nil {
			res.Err = fmt.Errorf("record %d: %w", id, err)
			return nil
		}
		_, err = m.Move(ctx, tx, id, res.From, to, Change{Reason: reason, Actor: actor, Manual: true})
		return err
	})
	return res, err
}
