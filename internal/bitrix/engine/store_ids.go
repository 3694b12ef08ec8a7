package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The store's queries of the id map.

// loadAllIDs returns the whole id map of an entity with few records (a dictionary).
func (s Store) loadAllIDs(ctx context.Context, entity string) (IDMap, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id, target_id FROM bitrix_id_map WHERE entity = $1`, entity)
	if err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	out := IDMap{}
	var sid, tid string
	if _, err := pgx.ForEachRow(rows, []any{&sid, &tid}, func() error {
		out[sid] = tid
		return nil
	}); err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	return out, nil
}

// loadIDMap returns the target ids of those of the source ids that were imported.
func (s Store) loadIDMap(ctx context.Context, entity string, sourceIDs []string) (IDMap, error) {
	out := IDMap{}
	if len(sourceIDs) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `SELECT source_id, target_id FROM bitrix_id_map WHERE entity = $1 AND source_id = ANY($2)`, entity, sourceIDs)
	if err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	var sid, tid string
	_, err = pgx.ForEachRow(rows, []any{&sid, &tid}, func() error {
		out[sid] = tid
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	return out, nil
}

// knownIDs returns which of the ids the entity's records include, and whether its get pass is
// complete over the whole portal.
func (s Store) knownIDs(ctx context.Context, entity string, ids []string) (map[string]bool, bool, error) {
	inv, err := s.loadInventory(ctx, entity)
	if err != nil {
		return nil, false, err
	}
	known := map[string]bool{}
	if len(ids) > 0 {
		rows, err := s.db.Query(ctx, `SELECT source_id FROM bitrix_records WHERE entity = $1 AND source_id = ANY($2) AND `+live(""), entity, ids)
		if err != nil {
			return nil, false, fmt.Errorf("look up %s: %w", entity, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, false, fmt.Errorf("look up %s: %w", entity, err)
		}
		for _, id := range got {
			known[id] = true
		}
	}
	return known, inv.Pass > 0 && inv.Complete && inv.Limit == nil, nil
}
