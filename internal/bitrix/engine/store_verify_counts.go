package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The store's queries for verify's checks of counted children and listed references.

// reachable is the SQL condition, over the bitrix_records row aliased a of entity ent, of a
// record the webhook's user can read: neither the engine's UnreachableKey nor the entity's own
// OutOfReach field in its payload. Both are code's constants, never input, so they stand in the
// SQL as literals (quoted).
func reachable(a string, ent *Entity) string {
	cond := fmt.Sprintf("NOT %s.payload ? %s", a, quoteLiteral(UnreachableKey))
	if ent.OutOfReach != "" {
		cond += fmt.Sprintf(" AND NOT %s.payload ? %s", a, quoteLiteral(ent.OutOfReach))
	}
	return "(" + cond + ")"
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// readableIDs returns the source ids of the entity's records the webhook's user can read and
// the portal has not deleted, in record order.
func (s Store) readableIDs(ctx context.Context, ent *Entity) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id FROM bitrix_records r WHERE r.entity = $1 AND `+reachable("r", ent)+` AND `+live("r")+`
ORDER BY r.id`, ent.Name)
	if err != nil {
		return nil, fmt.Errorf("list the readable %s: %w", ent.Name, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the readable %s: %w", ent.Name, err)
	}
	return out, nil
}

// listCoverage counts the ids a listed reference of the entity's records holds (a JSON list in
// the payload field) and those that have a target id of the entity it names, with the records
// holding ids that do not (up to MaxListed, their ids in numeric order). Records out of reach and
// excused ones are left out.
func (s Store) listCoverage(ctx context.Context, ent *Entity, ref Ref) (RefCoverage, error) {
	c := RefCoverage{Entity: ent.Name, Field: ref.Field, Refers: ref.Entity}
	// A field that holds no list holds no ids (jsonb_array_elements_text of NULL is no row).
	ids := `jsonb_array_elements_text(CASE WHEN jsonb_typeof(c.payload->$2) = 'array' THEN c.payload->$2 END) AS pid`
	where := `c.entity = $1 AND ` + reachable("c", ent) + ` AND NOT ` + excused("c", ent)
	err := s.db.QueryRow(ctx, `SELECT count(*), count(u.source_id) FROM bitrix_records c CROSS JOIN `+ids+`
LEFT JOIN bitrix_id_map u ON u.entity = $3 AND u.source_id = pid WHERE `+where, ent.Name, ref.Field, ref.Entity).Scan(&c.Total, &c.Mapped)
	if err != nil {
		return c, err
	}
	rows, err := s.db.Query(ctx, `SELECT c.source_id, array_agg(pid ORDER BY CASE WHEN pid ~ '^[0-9]{1,18}$' THEN pid::bigint END, pid)
FROM bitrix_records c CROSS JOIN `+ids+`
WHERE `+where+` AND NOT EXISTS (SELECT 1 FROM bitrix_id_map u WHERE u.entity = $3 AND u.source_id = pid)
GROUP BY c.id, c.source_id ORDER BY c.id LIMIT $4`, ent.Name, ref.Field, ref.Entity, MaxListed)
	if err != nil {
		return c, err
	}
	if c.Unmapped, err = pgx.CollectRows(rows, pgx.RowToStructByPos[UnmappedRefs]); err != nil {
		return c, err
	}
	return c, nil
}

// unimported lists every record of the entity that is not IMPORT_OK, leaving out acknowledged
// ones and those out of reach (Entity.OutOfReach, UnreachableKey), in record order.
func (s Store) unimported(ctx context.Context, ent *Entity) ([]RecordIssue, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id, status, coalesce(last_error, '') FROM bitrix_records r
WHERE r.entity = $1 AND r.status <> $2 AND `+reachable("r", ent)+` AND r.acknowledged_at IS NULL ORDER BY r.id`, ent.Name, string(ImportOK))
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", ent.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordIssue, error) {
		i := RecordIssue{Entity: ent.Name}
		return i, row.Scan(&i.SourceID, &i.Status, &i.Reason)
	})
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", ent.Name, err)
	}
	return out, nil
}

// countExcusedReachable is how many records of the entity verify excuses (acknowledged, or
// children of an acknowledged parent) among those in reach (Entity.OutOfReach,
// UnreachableKey): an entity that counts its records out of reach apart subtracts them once,
// not again when they are acknowledged too.
func (s Store) countExcusedReachable(ctx context.Context, ent *Entity) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND `+reachable("r", ent)+` AND `+
		excused("r", ent), ent.Name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count acknowledged %s: %w", ent.Name, err)
	}
	return n, nil
}

// countReachable is how many records of the entity are in reach (Entity.OutOfReach,
// UnreachableKey), whatever their status.
func (s Store) countReachable(ctx context.Context, ent *Entity) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND `+reachable("r", ent), ent.Name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count readable %s: %w", ent.Name, err)
	}
	return n, nil
}
