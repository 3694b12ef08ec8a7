package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// The SQL of deletions (deletions.go, deletions_set.go, deletions_verify.go).

// live is the SQL condition of a record the portal still has (not in a deleted status), over
// bitrix_records aliased a ("" for none). The statuses are constants, so they stand as literals.
func live(a string) string {
	if a != "" {
		a += "."
	}
	return fmt.Sprintf("%sstatus NOT IN ('%s', '%s')", a, DeletedAtSource, DeletedOnTarget)
}

// goneRecord is a record a complete get pass did not see.
type goneRecord struct {
	id       int64
	sourceID string
	status   status.Status
}

// unseen returns the entity's records, not deleted yet, that no get saw since the pass started
// (fetched_at is set by every get that reads a record, changed or not), and how many records
// not deleted the entity has.
func (s Store) unseen(ctx context.Context, entity string, since time.Time) ([]goneRecord, int64, error) {
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status FROM bitrix_records
WHERE entity = $1 AND fetched_at < $2 AND `+live("")+` ORDER BY id`, entity, since)
	if err != nil {
		return nil, 0, fmt.Errorf("find %s no longer on the portal: %w", entity, err)
	}
	gone, err := pgx.CollectRows(rows, scanGone)
	if err != nil {
		return nil, 0, fmt.Errorf("find %s no longer on the portal: %w", entity, err)
	}
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = $1 AND `+live(""), entity).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", entity, err)
	}
	return gone, n, nil
}

// markDeleted moves the records to DELETED_AT_SOURCE through the state machine, from whatever
// status each is in; it returns how many it moved.
func (s Store) markDeleted(ctx context.Context, entity string, recs []goneRecord, c status.Change) (int, error) {
	byStatus := map[status.Status][]int64{}
	for _, g := range recs {
		byStatus[g.status] = append(byStatus[g.status], g.id)
	}
	n := 0
	for _, from := range Machine.Statuses {
		if len(byStatus[from]) == 0 {
			continue
		}
		moved, err := Machine.MoveMany(ctx, s.db, byStatus[from], from, DeletedAtSource, c)
		if err != nil {
			return n, fmt.Errorf("mark %s deleted: %w", entity, err)
		}
		n += len(moved)
	}
	return n, nil
}

// markChildrenDeleted moves the child entity's records whose parent is among parents, and that
// are not deleted yet, to DELETED_AT_SOURCE; it returns their source ids.
func (s Store) markChildrenDeleted(ctx context.Context, child string, parents []string, c status.Change) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status FROM bitrix_records
WHERE entity = $1 AND parent_source_id = ANY($2) AND `+live("")+` ORDER BY id`, child, parents)
	if err != nil {
		return nil, fmt.Errorf("find %s of deleted parents: %w", child, err)
	}
	recs, err := pgx.CollectRows(rows, scanGone)
	if err != nil {
		return nil, fmt.Errorf("find %s of deleted parents: %w", child, err)
	}
	if _, err := s.markDeleted(ctx, child, recs, c); err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i, g := range recs {
		out[i] = g.sourceID
	}
	return out, nil
}

func scanGone(row pgx.CollectableRow) (goneRecord, error) {
	var g goneRecord
	var st string
	err := row.Scan(&g.id, &g.sourceID, &st)
	g.status = status.Status(st)
	return g, err
}

// deletedIDs returns the source ids of the entity's records in DELETED_AT_SOURCE, in record order.
func (s Store) deletedIDs(ctx context.Context, entity string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id FROM bitrix_records WHERE entity = $1 AND status = $2 ORDER BY id`,
		entity, string(DeletedAtSource))
	if err != nil {
		return nil, fmt.Errorf("list %s deleted on the portal: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list %s deleted on the portal: %w", entity, err)
	}
	return out, nil
}

// keptOnTarget counts the entity's records deleted on the portal that the target still holds
// (they have a target id: set has not removed them).
func (s Store) keptOnTarget(ctx context.Context, entity string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records r JOIN bitrix_id_map m ON m.entity = r.entity AND m.source_id = r.source_id
WHERE r.entity = $1 AND r.status = $2`, entity, string(DeletedAtSource)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count %s deleted on the portal and kept on the target: %w", entity, err)
	}
	return n, nil
}

// DeletedRecords are an entity's records in one deleted status, by portal id in record order.
type DeletedRecords struct {
	Status string   `json:"status"`
	IDs    []string `json:"ids"`
}

// deletedRecords lists the entity's records the portal deleted, by status.
func (s Store) deletedRecords(ctx context.Context, entity string) ([]DeletedRecords, error) {
	rows, err := s.db.Query(ctx, `SELECT status, array_agg(source_id ORDER BY id) FROM bitrix_records
WHERE entity = $1 AND NOT `+live("")+` GROUP BY 1 ORDER BY 1`, entity)
	if err != nil {
		return nil, fmt.Errorf("list %s deleted on the portal: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DeletedRecords])
	if err != nil {
		return nil, fmt.Errorf("list %s deleted on the portal: %w", entity, err)
	}
	return out, nil
}

// pendingDeletions returns up to limit of the entity's records in DELETED_AT_SOURCE after the
// record id after, in record order: what propagate still has to remove from the target.
func (s Store) pendingDeletions(ctx context.Context, entity string, after int64, limit int) ([]goneRecord, error) {
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status FROM bitrix_records
WHERE entity = $1 AND status = $2 AND id > $3 ORDER BY id LIMIT $4`, entity, string(DeletedAtSource), after, limit)
	if err != nil {
		return nil, fmt.Errorf("list %s to remove from the target: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, scanGone)
	if err != nil {
		return nil, fmt.Errorf("list %s to remove from the target: %w", entity, err)
	}
	return out, nil
}

// dropIDMap forgets the target ids of records the target no longer holds: a record the portal
// shows again is created anew under its key.
func (s Store) dropIDMap(ctx context.Context, entity string, sourceIDs []string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM bitrix_id_map WHERE entity = $1 AND source_id = ANY($2)`, entity, sourceIDs); err != nil {
		return fmt.Errorf("forget the target ids of removed %s: %w", entity, err)
	}
	return nil
}

// resendLinking moves the entity's IMPORT_OK records whose payload field names one of ids (as a
// value, or in a list) back to NEW; it returns how many it moved.
func (s Store) resendLinking(ctx context.Context, entity, field string, ids []string, c status.Change) (int, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM bitrix_records r WHERE r.entity = $1 AND r.status = $4
AND (r.payload->>$2 = ANY($3) OR (jsonb_typeof(r.payload->$2) = 'array'
     AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(r.payload->$2) AS x WHERE x = ANY($3)))) ORDER BY id`,
		entity, field, ids, string(ImportOK))
	if err != nil {
		return 0, fmt.Errorf("find %s linking to removed records: %w", entity, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(found) == 0 {
		return 0, err
	}
	moved, err := Machine.MoveMany(ctx, s.db, found, ImportOK, StatusNew, c)
	if err != nil {
		return 0, fmt.Errorf("send %s again without their links: %w", entity, err)
	}
	return len(moved), nil
}

// linksToDeleted returns which of the records (by bitrix_records id) name, through one of ent's
// references to the entities owners, a record of those that the portal deleted.
func (s Store) linksToDeleted(ctx context.Context, ent *Entity, owners []string, ids []int64) (map[int64]bool, error) {
	recs, err := s.loadRecords(ctx, ids)
	if err != nil {
		return nil, err
	}
	named := map[string][]string{} // owner entity -> ids named
	byRecord := map[int64]map[string][]string{}
	for _, r := range recs {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r.Payload, &fields); err != nil {
			return nil, fmt.Errorf("%s %s: %w", ent.Name, r.SourceID, err)
		}
		byRecord[r.ID] = map[string][]string{}
		for _, ref := range ent.Refs {
			if !slices.Contains(owners, ref.Entity) {
				continue
			}
			got := ref.ids(fields)
			byRecord[r.ID][ref.Entity] = append(byRecord[r.ID][ref.Entity], got...)
			named[ref.Entity] = append(named[ref.Entity], got...)
		}
	}
	deleted := map[string]map[string]bool{}
	for owner, want := range named {
		rows, err := s.db.Query(ctx, `SELECT source_id FROM bitrix_records WHERE entity = $1 AND source_id = ANY($2) AND NOT `+live(""),
			owner, want)
		if err != nil {
			return nil, fmt.Errorf("look up deleted %s: %w", owner, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("look up deleted %s: %w", owner, err)
		}
		deleted[owner] = map[string]bool{}
		for _, id := range got {
			deleted[owner][id] = true
		}
	}
	out := map[int64]bool{}
	for id, refs := range byRecord {
		for owner, named := range refs {
			if slices.ContainsFunc(named, func(n string) bool { return deleted[owner][n] }) {
				out[id] = true
			}
		}
	}
	return out, nil
}

// recountWalked sets a walked entity's source total, when its pass is complete, to the records it
// holds that the portal did not delete (what finishWalk counts).
func (s Store) recountWalked(ctx context.Context, entity string) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET source_total = (SELECT count(*) FROM bitrix_records WHERE entity = $1 AND `+
		live("")+`), updated_at = now() WHERE entity = $1 AND get_complete`, entity)
	if err != nil {
		return fmt.Errorf("count %s again after deletions: %w", entity, err)
	}
	return nil
}
