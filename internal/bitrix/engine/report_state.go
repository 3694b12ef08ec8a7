package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// What `bitrix status` says of an entity beyond its counts: whether it is verified (a child by
// its parent's verify, which covers it), which of its NEW records wait for a parent, and whether
// its get pass is being read now or was interrupted.

// Waiting counts a child entity's NEW records that wait for a parent that is not imported: they
// go by themselves once it is, and cannot be accepted on their own (waiting.go).
type Waiting struct {
	Records int64 `json:"records"`
	// Excused counts those whose parent a person accepted as a known exception: they stay NEW
	// for as long as it stays unmigrated, and verify passes without them.
	Excused int64 `json:"excused"`
	// Parents are the parents' portal ids (up to MaxListed).
	Parents []string `json:"parents"`
}

// waiting counts the child's records that wait for their parent, nil when none does.
func (s Store) waiting(ctx context.Context, ent *Entity) (*Waiting, error) {
	if ent.Parent == "" {
		return nil, nil
	}
	var w Waiting
	err := s.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE `+excused("r", ent)+`),
coalesce((array_agg(DISTINCT r.parent_source_id ORDER BY r.parent_source_id))[1:$2], '{}')
FROM bitrix_records r WHERE r.entity = $1 AND `+waitsForParent("r", ent), ent.Name, MaxListed).Scan(&w.Records, &w.Excused, &w.Parents)
	if err != nil {
		return nil, fmt.Errorf("count %s waiting for their parent: %w", ent.Name, err)
	}
	if w.Records == 0 {
		return nil, nil
	}
	return &w, nil
}

// liveRun is a run that holds its lock now.
type liveRun struct {
	id      int64
	started time.Time
}

// liveHolders returns, by lock name, the live run recorded as the holder of each of the
// entity commands' locks ("bitrix <entity>"): the entity's own command, or `bitrix migrate`, which
// records itself the holder of every one of them.
func (s Store) liveHolders(ctx context.Context, reg *Registry) (map[string]liveRun, error) {
	var names []string
	for _, name := range reg.CommandNames() {
		names = append(names, "bitrix "+name)
	}
	rows, err := s.db.Query(ctx, `SELECT l.name, r.id, r.started_at FROM run_locks l JOIN runs r ON r.id = l.run_id
WHERE l.name = ANY($1) AND r.outcome = 'running'`, names)
	if err != nil {
		return nil, fmt.Errorf("the runs holding the entities' locks: %w", err)
	}
	byName := map[string]liveRun{}
	var ids []int64
	var name string
	var r liveRun
	if _, err := pgx.ForEachRow(rows, []any{&name, &r.id, &r.started}, func() error {
		byName[name] = r
		ids = append(ids, r.id)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("the runs holding the entities' locks: %w", err)
	}
	if len(ids) == 0 {
		return byName, nil
	}
	live, err := status.LiveRuns(ctx, s.db, ids)
	if err != nil {
		return nil, err
	}
	for name, r := range byName {
		if !live[r.id] {
			delete(byName, name)
		}
	}
	return byName, nil
}

// touchPasses marks the interrupted passes of the family as being read again, as a get begins:
// `bitrix status` tells a pass a live run is reading (touched since that run started) from one
// a run that ended left behind.
func (s Store) touchPasses(ctx context.Context, family []*Entity) error {
	names := make([]string, len(family))
	for i, f := range family {
		names[i] = f.Name
	}
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET updated_at = now() WHERE entity = ANY($1) AND pass > 0 AND NOT get_complete`, names)
	if err != nil {
		return fmt.Errorf("mark the get passes of %s resumed: %w", family[0].Name, err)
	}
	return nil
}

// reportState fills what the status report says beyond the entity's counts: its VERIFIED flag
// (a child's is its parent's), its records waiting for their parent, and whether a live run is
// reading its get pass. inventories holds every entity's inventory read so far, by name.
func (e *Engine) reportState(ctx context.Context, ent *Entity, es *EntityStatus, inventories map[string]*Inventory, live map[string]liveRun) error {
	top := verifiedAs(e.registry, ent)
	if top != ent.Name {
		es.VerifiedWith = top
	}
	if inventories[top] == nil {
		inv, err := e.store().loadInventory(ctx, top)
		if err != nil {
			return err
		}
		inventories[top] = &inv
	}
	es.Verified, es.VerifiedAt = inventories[top].Verified, inventories[top].VerifiedAt
	var err error
	if es.Waiting, err = e.store().waiting(ctx, ent); err != nil {
		return err
	}
	inv := es.Inventory
	if inv == nil || inv.Pass == 0 || inv.Complete {
		return nil
	}
	if r, ok := live["bitrix "+top]; ok && inv.UpdatedAt != nil && !inv.UpdatedAt.Before(r.started) {
		es.GetRunID = r.id
	}
	return nil
}

// VerifiedState is the entity's VERIFIED column: "yes, <time>" or "no"; a child's ends with
// "(with <parent>)", its parent's verify covering it.
func (es EntityStatus) VerifiedState() string {
	s := "no"
	if es.Verified && es.VerifiedAt != nil {
		s = "yes, " + es.VerifiedAt.UTC().Format(time.RFC3339)
	}
	if es.VerifiedWith != "" {
		s += " (with " + es.VerifiedWith + ")"
	}
	return s
}

// PassState says where the entity's get pass stands: never run, complete, in progress (a live
// run reads it now) or interrupted (a run that ended left it, the next get resumes it); "" for a
// child read with every page of its parent, which has no pass of its own.
func (es EntityStatus) PassState() string {
	inv := es.Inventory
	var s string
	switch {
	case inv == nil:
		return ""
	case inv.Pass == 0:
		s = "never"
	case inv.Complete:
		s = fmt.Sprintf("pass %d complete (%d rows)", inv.Pass, inv.PassRows)
	case es.GetRunID != 0:
		s = fmt.Sprintf("pass %d in progress by run %d, after ID %s (%d rows)", inv.Pass, es.GetRunID, inv.Cursor, inv.PassRows)
	default:
		s = fmt.Sprintf("pass %d interrupted after ID %s (%d rows)", inv.Pass, inv.Cursor, inv.PassRows)
	}
	if inv.Limit != nil {
		s += fmt.Sprintf(", test_limit %d", *inv.Limit)
	}
	return s
}

// WaitingState says why a child's NEW records are not sent: they wait for their parent, "" when
// none does.
func (es EntityStatus) WaitingState() string {
	w := es.Waiting
	if w == nil {
		return ""
	}
	s := "wait for their parent, not imported (they go once it is)"
	if w.Excused > 0 {
		s += fmt.Sprintf("; %d of them wait for parents accepted as known exceptions and stay NEW, excused with them (verify passes)", w.Excused)
	}
	return s
}
