package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// CountExcusedReachable is how many records of the entity verify excuses (acknowledged, or
// children of an acknowledged parent) among those whose payload lacks the field skip: an entity
// that counts its records out of reach apart subtracts them once, not again when they
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

// ValueCount is how many records share one value.
type ValueCount struct {
	Value string
	N     int64
}

// CountUnreachableBy counts the entity's records out of reach whose reason contains because,
// by their value of the payload field, most first.
func (s Store) CountUnreachableBy(ctx context.Context, entity, field, because string) ([]ValueCount, error) {
	rows, err := s.db.Query(ctx, `SELECT coalesce(payload->>$2, ''), count(*) FROM bitrix_records
WHERE entity = $1 AND strpos(payload->>$3, $4) > 0 GROUP BY 1 ORDER BY 2 DESC, 1`, entity, field, UnreachableKey, because)
	if err != nil {
		return nil, fmt.Errorf("count unreachable %s by %s: %w", entity, field, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ValueCount])
	if err != nil {
		return nil, fmt.Errorf("count unreachable %s by %s: %w", entity, field, err)
	}
	return out, nil
}

// waitingFor counts, by parent, the child's records that wait (NEW) for one of the parents.
func (s Store) waitingFor(ctx context.Context, child *Entity, parents []string) (map[string]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT c.parent_source_id, count(*) FROM bitrix_records c
WHERE c.entity = $1 AND c.parent_source_id = ANY($2) AND c.status = $3 GROUP BY 1`, child.Name, parents, string(StatusNew))
	if err != nil {
		return nil, fmt.Errorf("count %s waiting for their %s: %w", child.Name, child.Parent, err)
	}
	n := map[string]int64{}
	var id string
	var c int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &c}, func() error { n[id] = c; return nil }); err != nil {
		return nil, fmt.Errorf("count %s waiting for their %s: %w", child.Name, child.Parent, err)
	}
	return n, nil
}
