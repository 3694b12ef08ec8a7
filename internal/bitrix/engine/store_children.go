package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// The SQL of what a delta pass reads and concludes of children (children_delta.go) and of records
// read per owner (lister_perrecord.go).

// changedOf returns the records of recs that are not stored as they are: new ones, ones whose
// stored checksum differs, and ones stored as deleted (saveRecords takes those for changed).
func (s Store) changedOf(ctx context.Context, entity string, recs []Incoming) ([]Incoming, error) {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.sourceID
	}
	rows, err := s.db.Query(ctx, `SELECT source_id, checksum FROM bitrix_records
WHERE entity = $1 AND source_id = ANY($2) AND `+live(""), entity, ids)
	if err != nil {
		return nil, fmt.Errorf("compare %s with what is stored: %w", entity, err)
	}
	stored := map[string]string{}
	var sid, sum string
	if _, err := pgx.ForEachRow(rows, []any{&sid, &sum}, func() error {
		stored[sid] = sum
		return nil
	}); err != nil {
		return nil, fmt.Errorf("compare %s with what is stored: %w", entity, err)
	}
	var out []Incoming
	for _, r := range recs {
		if sum, ok := stored[r.sourceID]; !ok || sum != r.checksum {
			out = append(out, r)
		}
	}
	return out, nil
}

// unlistedChildren returns the child entity's live records whose parent is among parents and
// whose source id is not among seen.
func (s Store) unlistedChildren(ctx context.Context, child string, parents, seen []string) ([]goneRecord, error) {
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status FROM bitrix_records
WHERE entity = $1 AND parent_source_id = ANY($2) AND NOT (source_id = ANY($3)) AND `+live("")+` ORDER BY id`,
		child, parents, seen)
	if err != nil {
		return nil, fmt.Errorf("find %s no longer on the portal: %w", child, err)
	}
	out, err := pgx.CollectRows(rows, scanGone)
	if err != nil {
		return nil, fmt.Errorf("find %s no longer on the portal: %w", child, err)
	}
	return out, nil
}

// ownersSince is owners for a delta pass: the live records of the entities of, after the record
// id after, that a get read (fetched_at) at or after since.
func (s Store) ownersSince(ctx context.Context, of []string, entity string, after int64, since time.Time, n int) ([]owner, error) {
	rows, err := s.db.Query(ctx, `SELECT id, entity, source_id FROM bitrix_records WHERE entity = ANY($1) AND id > $2
AND fetched_at >= $4 AND `+live("")+` ORDER BY id LIMIT $3`, of, after, n, since)
	if err != nil {
		return nil, fmt.Errorf("list %v read since %s to read %s of: %w", of, since.Format(time.RFC3339), entity, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (owner, error) {
		var o owner
		return o, row.Scan(&o.id, &o.entity, &o.sourceID)
	})
	if err != nil {
		return nil, fmt.Errorf("list %v read since %s to read %s of: %w", of, since.Format(time.RFC3339), entity, err)
	}
	return out, nil
}

// ownedRow is a live record of an entity read per owner, with the owner it names.
type ownedRow struct {
	goneRecord
	owner string // the owner's source id
}

// ownedRows returns the live records of ent that name, through ref (one of ent's references to
// the owner entity ref.Entity), a record of it: one among ownerIDs when deleted is false, any
// record of it the portal deleted when deleted is true.
func (s Store) ownedRows(ctx context.Context, ent *Entity, ref Ref, ownerIDs []string, deleted bool) ([]ownedRow, error) {
	ownerCond := `o.source_id = ANY($4) AND ` + live("o")
	args := []any{ent.Name, ref.Entity, ref.Field}
	if deleted {
		ownerCond = `NOT ` + live("o")
	} else {
		args = append(args, ownerIDs)
	}
	rows, err := s.db.Query(ctx, `SELECT c.id, c.source_id, c.status, c.payload, o.source_id FROM bitrix_records c
JOIN bitrix_records o ON o.entity = $2 AND o.source_id = c.payload->>$3
WHERE c.entity = $1 AND `+live("c")+` AND `+ownerCond+` ORDER BY c.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("find the %s of %s: %w", ent.Name, ref.Entity, err)
	}
	var out []ownedRow
	var r ownedRow
	var st string
	var payload json.RawMessage
	_, err = pgx.ForEachRow(rows, []any{&r.id, &r.sourceID, &st, &payload, &r.owner}, func() error {
		fields, err := FieldsOf(payload)
		if err != nil {
			return fmt.Errorf("%s %s: %w", ent.Name, r.sourceID, err)
		}
		// The field may name a record of another owner entity (a comment's ENTITY_ID is a
		// company's, a contact's or a deal's by its ENTITY_TYPE): the reference says which.
		for _, id := range ref.ids(fields) {
			if id == r.owner {
				r.status = status.Status(st)
				out = append(out, r)
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the %s of %s: %w", ent.Name, ref.Entity, err)
	}
	return out, nil
}

// liveUnseen returns, of the records (by bitrix_records id), those still live whose source id is
// not among seen.
func (s Store) liveUnseen(ctx context.Context, ids []int64, seen []string) ([]goneRecord, error) {
	rows, err := s.db.Query(ctx, `SELECT id, source_id, status FROM bitrix_records
WHERE id = ANY($1) AND NOT (source_id = ANY($2)) AND `+live("")+` ORDER BY id`, ids, seen)
	if err != nil {
		return nil, fmt.Errorf("find records no longer on the portal: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanGone)
	if err != nil {
		return nil, fmt.Errorf("find records no longer on the portal: %w", err)
	}
	return out, nil
}
