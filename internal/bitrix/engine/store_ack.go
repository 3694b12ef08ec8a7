package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

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
