package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The queries an entity's own code asks of its records: generic in the entity, the payload
// fields and the entities they name, which the caller gives.

// FieldValue is one record's value of a payload field, as text ("" when absent or null).
type FieldValue struct {
	SourceID, Value string
}

// FieldValues returns every record's value of the payload field, in record order.
func (s Store) FieldValues(ctx context.Context, entity, field string) ([]FieldValue, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id, coalesce(payload->>$2, '') FROM bitrix_records WHERE entity = $1 AND `+live("")+`
ORDER BY id`,
		entity, field)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", field, entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FieldValue])
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", field, entity, err)
	}
	return out, nil
}

// CountWithField counts the entity's records whose payload has the field, and those without,
// leaving out those the portal deleted.
func (s Store) CountWithField(ctx context.Context, entity, field string) (with, without int64, err error) {
	err = s.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE payload ? $2), count(*) FILTER (WHERE NOT payload ? $2)
FROM bitrix_records WHERE entity = $1 AND `+live(""), entity, field).Scan(&with, &without)
	if err != nil {
		return 0, 0, fmt.Errorf("count %s by %s: %w", entity, field, err)
	}
	return with, without, nil
}

// countByParent counts a child entity's records by their parent's source id.
func (s Store) countByParent(ctx context.Context, child string) (map[string]int64, error) {
	return s.byParent(ctx, "count "+child+" per parent",
		`SELECT parent_source_id, count(*) FROM bitrix_records WHERE entity = $1 GROUP BY 1`, child)
}

// byParent runs a query of one figure per parent (its source id, the figure) into a map; what
// names the query in its error.
func (s Store) byParent(ctx context.Context, what, sql string, args ...any) (map[string]int64, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := map[string]int64{}
	var parent string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&parent, &n}, func() error { out[parent] = n; return nil }); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
