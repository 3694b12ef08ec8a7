package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The store's queries that one entity's own code asks, each with its one caller named: what the
// engine cannot yet do for every entity. A query that a second entity needs, or that the engine
// can take over (as it took the counts per parent, the coverage of listed references, the counts
// of an entity the portal cannot count and the custom fields the target cannot create), leaves
// this file.

// Tx runs fn in one transaction: everything fn stores through tx is committed together, or not
// at all when fn fails.
//
// Caller: funnelWalker.Get (internal/bitrix/lister_funnels.go), which starts two entities' passes
// and saves their one page together.
func (s Store) Tx(ctx context.Context, fn func(tx Store) error) error {
	b, ok := s.db.(interface {
		Begin(ctx context.Context) (pgx.Tx, error)
	})
	if !ok {
		return fmt.Errorf("bitrix store: %T cannot begin a transaction", s.db)
	}
	return pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error { return fn(NewStore(tx)) })
}

// FinishPass marks the entity's get pass complete with the number of rows the source had.
//
// Caller: saveChats (internal/bitrix/chats_get.go).
func (s Store) FinishPass(ctx context.Context, entity string, total int64) error {
	return s.finishPass(ctx, entity, total)
}

// Payloads returns the payloads of the entity's records, in record order.
//
// Caller: storedChats (internal/bitrix/chats_get.go).
func (s Store) Payloads(ctx context.Context, entity string) ([]json.RawMessage, error) {
	rows, err := s.db.Query(ctx, `SELECT payload FROM bitrix_records WHERE entity = $1 ORDER BY id`, entity)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", entity, err)
	}
	return out, nil
}

// NewestBySeq returns, per parent, the highest sequence among a child entity's records whose
// source ids are "<key>:<sequence>" (a walk's records numbered within their key, as messages
// within a conversation); field, when not empty, keeps only the records whose payload has it.
//
// Caller: newestMessages (internal/bitrix/chats_messages.go).
func (s Store) NewestBySeq(ctx context.Context, child, field string) (map[string]int64, error) {
	return s.byParent(ctx, "find the newest stored "+child, `SELECT parent_source_id, max(split_part(source_id, ':', 2)::bigint)
FROM bitrix_records WHERE entity = $1 AND ($2 = '' OR payload ? $2) GROUP BY 1`, child, field)
}

// Childless returns the source ids of the parent entity's records that have no record of the
// child entity, in record order.
//
// Caller: verifyFeed (internal/bitrix/feed_payload.go).
func (s Store) Childless(ctx context.Context, parent, child string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT p.source_id FROM bitrix_records p WHERE p.entity = $1
AND NOT EXISTS (SELECT 1 FROM bitrix_records c WHERE c.entity = $2 AND c.parent_source_id = p.source_id) ORDER BY p.id`,
		parent, child)
	if err != nil {
		return nil, fmt.Errorf("find %s without %s: %w", parent, child, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find %s without %s: %w", parent, child, err)
	}
	return out, nil
}

// FieldMatch names the records of Entity whose payload Field holds Value.
type FieldMatch struct {
	Entity, Field, Value string
}

// TargetIDByField returns the target id of the record the match names; pgx.ErrNoRows (wrapped)
// when no such record is imported.
//
// Caller: smartFieldSplit (internal/bitrix/entity_smart.go).
func (s Store) TargetIDByField(ctx context.Context, m FieldMatch) (string, error) {
	var target string
	err := s.db.QueryRow(ctx, `SELECT m.target_id FROM bitrix_records r
JOIN bitrix_id_map m ON m.entity = r.entity AND m.source_id = r.source_id
WHERE r.entity = $1 AND r.payload->>$2 = $3`, m.Entity, m.Field, m.Value).Scan(&target)
	if err != nil {
		return "", fmt.Errorf("target id of the %s whose %s is %s: %w", m.Entity, m.Field, m.Value, err)
	}
	return target, nil
}

// ValueCount is how many records share one value.
type ValueCount struct {
	Value string
	N     int64
}

// UnreachableBy selects the records of Entity out of reach whose reason contains Because, to be
// counted by their value of the payload Field.
type UnreachableBy struct {
	Entity, Field, Because string
}

// CountUnreachableBy counts the records the selection names by their value of its field, most
// first.
//
// Caller: withheldAuthors (internal/bitrix/feed_authors.go).
func (s Store) CountUnreachableBy(ctx context.Context, u UnreachableBy) ([]ValueCount, error) {
	rows, err := s.db.Query(ctx, `SELECT coalesce(payload->>$2, ''), count(*) FROM bitrix_records
WHERE entity = $1 AND strpos(payload->>$3, $4) > 0 GROUP BY 1 ORDER BY 2 DESC, 1`, u.Entity, u.Field, UnreachableKey, u.Because)
	if err != nil {
		return nil, fmt.Errorf("count unreachable %s by %s: %w", u.Entity, u.Field, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ValueCount])
	if err != nil {
		return nil, fmt.Errorf("count unreachable %s by %s: %w", u.Entity, u.Field, err)
	}
	return out, nil
}

// RollUpParams is one step of the get pass of an entity read in parts (each part an inventory
// row of its own): a part read, or the pass complete.
type RollUpParams struct {
	// Entity is the entity read in parts.
	Entity string
	// Cursor is the part just read; the pass's rows and source total become the sums of the
	// inventory rows named in Parts.
	Cursor string
	Parts  []string
	// Complete marks the pass complete instead, with the source total the parts summed to (0
	// when none said).
	Complete bool
}

// RollUp advances the get pass of an entity read in parts past the part just read, or marks it
// complete.
//
// Caller: smartItems.Get (internal/bitrix/lister_smart.go).
func (s Store) RollUp(ctx context.Context, p RollUpParams) error {
	if p.Complete {
		if _, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET get_complete = true, get_finished_at = now(),
source_total = coalesce(source_total, 0), `+lastFullAtSQL("true")+`, updated_at = now() WHERE entity = $1`, p.Entity); err != nil {
			return fmt.Errorf("finish get of %s: %w", p.Entity, err)
		}
		return nil
	}
	if _, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET get_cursor = $2,
pass_rows = (SELECT coalesce(sum(pass_rows), 0) FROM bitrix_inventory WHERE entity = ANY($3)),
source_total = (SELECT sum(source_total) FROM bitrix_inventory WHERE entity = ANY($3)), updated_at = now()
WHERE entity = $1`, p.Entity, p.Cursor, p.Parts); err != nil {
		return fmt.Errorf("advance get of %s past %s: %w", p.Entity, p.Cursor, err)
	}
	return nil
}
