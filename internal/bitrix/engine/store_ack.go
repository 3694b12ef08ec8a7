package engine

import (
	"context"
	"fmt"
)

// CountExcusedReachable is how many records of the entity verify excuses (acknowledged, or
// children of an acknowledged parent) among those whose payload lacks the field skip: an entity
// that counts its records out of reach apart (chats) subtracts them once, not again when they
// are acknowledged too.
func (s Store) CountExcusedReachable(ctx context.Context, ent *Entity, skip string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND r.payload->$2 IS NULL AND `+
		excused("r", ent), ent.Name, skip).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count acknowledged %s: %w", ent.Name, err)
	}
	return n, nil
}
