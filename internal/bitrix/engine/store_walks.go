package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The store's queries for the walks that follow other records: per-record listings and key
// walks.

// owners returns up to n records of the entities of, after the id in id order: the records a
// per-record listing of entity reads its rows for.
func (s Store) owners(ctx context.Context, of []string, entity string, after int64, n int) ([]owner, error) {
	rows, err := s.db.Query(ctx, `SELECT id, entity, source_id FROM bitrix_records WHERE entity = ANY($1) AND id > $2 AND `+live("")+`
ORDER BY id LIMIT $3`, of, after, n)
	if err != nil {
		return nil, fmt.Errorf("list %v to read %s of: %w", of, entity, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (owner, error) {
		var o owner
		return o, row.Scan(&o.id, &o.entity, &o.sourceID)
	})
	if err != nil {
		return nil, fmt.Errorf("list %v to read %s of: %w", of, entity, err)
	}
	return out, nil
}

// lastPageOfEachKey calls fn with the pass and next cursor of the last page logged for each key
// of the entity's key walk (a key is the first word of a page's cursor).
func (s Store) lastPageOfEachKey(ctx context.Context, entity string, fn func(pass int, next string)) error {
	rows, err := s.db.Query(ctx, `SELECT DISTINCT ON (split_part(cursor, ' ', 1)) pass, next_cursor FROM bitrix_page_log
WHERE entity = $1 ORDER BY split_part(cursor, ' ', 1), id DESC`, entity)
	if err != nil {
		return fmt.Errorf("load %s cursors: %w", entity, err)
	}
	var pass int
	var next string
	_, err = pgx.ForEachRow(rows, []any{&pass, &next}, func() error {
		fn(pass, next)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load %s cursors: %w", entity, err)
	}
	return nil
}
