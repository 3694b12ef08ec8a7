package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The store's queries for set: what is left to send, what waits for its parent, and recording
// what the target accepted.

// countNotOK counts the entity's records that still have to reach IMPORT_OK: not those deleted
// on the portal (there is nothing left to import; under propagate the target removed them) nor
// those a person acknowledged, which verify does not count against the entity either.
func (s Store) countNotOK(ctx context.Context, ent *Entity) (int64, error) {
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r WHERE r.entity = $1 AND r.status <> $2 AND `+
		live("r")+` AND NOT `+excused("r", ent), ent.Name, string(ImportOK)).Scan(&n); err != nil {
		return 0, fmt.Errorf("check %s: %w", ent.Name, err)
	}
	return n, nil
}

// countBacklog counts the records of the entities that set still has to send.
func (s Store) countBacklog(ctx context.Context, entities []string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = ANY($1) AND status = ANY($2)`,
		entities, statusNames(pending)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count %v backlog: %w", entities, err)
	}
	return n, nil
}

// orphans lists the records of ent waiting for their parent that are not waiting for a retry of
// their own, with their parent's state.
func (s Store) orphans(ctx context.Context, ent *Entity) ([]orphan, error) {
	rows, err := s.db.Query(ctx, `SELECT r.id, r.source_id, r.status, r.parent_source_id, coalesce(p.status, ''),
coalesce(p.last_error, '') FROM bitrix_records r
LEFT JOIN bitrix_records p ON p.entity = r.entity AND p.source_id = r.parent_source_id
WHERE r.entity = $1 AND r.status = ANY($2) AND r.parent_source_id IS NOT NULL
  AND (p.status IS NULL OR p.status <> $3) ORDER BY r.id`, ent.Name, statusNames(pending), string(ImportOK))
	if err != nil {
		return nil, fmt.Errorf("find %s waiting for their parent: %w", ent.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (orphan, error) {
		var o orphan
		return o, row.Scan(&o.id, &o.sourceID, &o.status, &o.parent, &o.parentStatus, &o.parentError)
	})
	if err != nil {
		return nil, fmt.Errorf("find %s waiting for their parent: %w", ent.Name, err)
	}
	return out, nil
}

// lockImported locks the records of ids, in id order (so two batches never wait on each other
// in a cycle), and calls fn with each one's status and checksum as they are now: a record that
// changed since it was sent is not marked imported with the old copy.
func (s Store) lockImported(ctx context.Context, entity string, ids []int64, fn func(id int64, status, checksum string)) error {
	if s.tx == nil {
		return errNoTx
	}
	rows, err := s.tx.Query(ctx, `SELECT id, status, checksum FROM bitrix_records WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return fmt.Errorf("lock imported %s: %w", entity, err)
	}
	var id int64
	var st, sum string
	_, err = pgx.ForEachRow(rows, []any{&id, &st, &sum}, func() error {
		fn(id, st, sum)
		return nil
	})
	if err != nil {
		return fmt.Errorf("lock imported %s: %w", entity, err)
	}
	return nil
}

// mapImported records the target ids of imported records (source ids, target ids and checksums
// side by side) in bitrix_id_map, replacing the ids of records imported again.
func (s Store) mapImported(ctx context.Context, entity string, sourceIDs, targetIDs, checksums []string) error {
	if s.tx == nil {
		return errNoTx
	}
	_, err := s.tx.Exec(ctx, `INSERT INTO bitrix_id_map (entity, source_id, target_id, checksum)
SELECT $1, s, t, c FROM unnest($2::text[], $3::text[], $4::text[]) AS u(s, t, c)
ON CONFLICT (entity, source_id) DO UPDATE SET target_id = EXCLUDED.target_id, checksum = EXCLUDED.checksum, imported_at = now()`,
		entity, sourceIDs, targetIDs, checksums)
	if err != nil {
		return fmt.Errorf("map imported %s: %w", entity, err)
	}
	return nil
}
