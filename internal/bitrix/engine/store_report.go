package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The store's queries for the status report.

// notMigrated lists every record of the entity in an attention status, grouped.
func (s Store) notMigrated(ctx context.Context, entity string) ([]NotMigrated, error) {
	rows, err := s.db.Query(ctx, `SELECT status, coalesce(last_error, ''), acknowledged_at IS NOT NULL,
coalesce(min(acknowledged_by), ''), coalesce(min(acknowledged_reason), ''), array_agg(source_id ORDER BY id)
FROM bitrix_records WHERE entity = $1 AND status = ANY($2) GROUP BY 1, 2, 3 ORDER BY count(*) DESC, 2`,
		entity, statusNames(Machine.Attention))
	if err != nil {
		return nil, fmt.Errorf("list %s not migrated: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[NotMigrated])
	if err != nil {
		return nil, fmt.Errorf("list %s not migrated: %w", entity, err)
	}
	return out, nil
}

func (s Store) topReasons(ctx context.Context, entity string) ([]ReasonCount, error) {
	rows, err := s.db.Query(ctx, `SELECT status, coalesce(last_error, ''), count(*) FROM bitrix_records
WHERE entity = $1 AND status = ANY($2) GROUP BY 1, 2 ORDER BY 3 DESC, 2 LIMIT 5`, entity, statusNames(Machine.Attention))
	if err != nil {
		return nil, fmt.Errorf("reasons of %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ReasonCount])
	if err != nil {
		return nil, fmt.Errorf("reasons of %s: %w", entity, err)
	}
	return out, nil
}

// countFields counts the entity's custom fields read by fields-get, and those on the target.
func (s Store) countFields(ctx context.Context, entity string) (all, onTarget int64, err error) {
	if err := s.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE on_target) FROM bitrix_fields WHERE entity = $1`,
		entity).Scan(&all, &onTarget); err != nil {
		return 0, 0, fmt.Errorf("count %s fields: %w", entity, err)
	}
	return all, onTarget, nil
}
