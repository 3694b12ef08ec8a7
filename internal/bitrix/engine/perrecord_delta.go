package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/ingest-dev/ingest/internal/status"
)

// A delta pass of a PerRecord entity reads only the owners read since its last pass started
// (lister_perrecord.go): the generic conclusion (deletions.go: unseen since the pass started)
// would take the rows of every other owner for deleted, so it concludes nothing after such a
// pass (cannotConclude). Instead, each owner read again concludes, in the transaction that stores
// its rows, that its stored rows its answer no longer holds were deleted on the portal; and the
// rows of the owners deleted since follow them as the pass ends. As in a full pass, an owner the
// portal answered gone concludes nothing of its own (its deletion is its own get's to find).

// key names an owner across the entities of Of.
func (o owner) key() string { return o.entity + "\x00" + o.sourceID }

// ownerRefs are ent's references to each owner entity of Of.
func (w *perRecordWalk) ownerRefs(of string) []Ref {
	var refs []Ref
	for _, ref := range w.g.Ent.Refs {
		if ref.Entity == of {
			refs = append(refs, ref)
		}
	}
	return refs
}

// storedRows returns, in a delta pass (not under test_limit), the live rows stored for each of
// the owners (by owner.key), by bitrix_records id: one query per reference to each owner entity
// for a round of owners, rather than one per owner.
func (w *perRecordWalk) storedRows(ctx context.Context, owners []owner) (map[string][]int64, error) {
	if w.since == nil || w.g.Env.e.testLimit > 0 {
		return nil, nil
	}
	byEntity := map[string][]string{}
	for _, o := range owners {
		byEntity[o.entity] = append(byEntity[o.entity], o.sourceID)
	}
	out := map[string][]int64{}
	for _, of := range w.p.Of {
		if len(byEntity[of]) == 0 {
			continue
		}
		for _, ref := range w.ownerRefs(of) {
			rows, err := w.g.Env.e.store().ownedRows(ctx, w.g.Ent, ref, byEntity[of], false)
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				k := owner{entity: of, sourceID: r.owner}.key()
				if !slices.Contains(out[k], r.id) {
					out[k] = append(out[k], r.id)
				}
			}
		}
	}
	return out, nil
}

// conclude moves, in the chunk's transaction tx, the rows stored before for its owners read in
// full (before) that their answers (recs) no longer hold to DELETED_AT_SOURCE.
func (w *perRecordWalk) conclude(ctx context.Context, tx Store, before []int64, recs []Incoming) (int, error) {
	e, ent := w.g.Env.e, w.g.Ent
	seen := make([]string, len(recs))
	for i, r := range recs {
		seen[i] = r.sourceID
	}
	gone, err := tx.liveUnseen(ctx, before, seen)
	if err != nil || len(gone) == 0 {
		return 0, err
	}
	c := status.Change{Reason: fmt.Sprintf("deleted on the portal: the %s of the record it belongs to, read again, no longer hold it", ent.noun()),
		Code: CodeDeletedAtSource, Actor: e.actor, RunID: e.runID}
	return e.markGone(ctx, tx, ent, gone, c)
}

// follow moves, in the transaction tx that ends a delta pass, the live rows of owners the portal
// deleted to DELETED_AT_SOURCE, as following them.
func (w *perRecordWalk) follow(ctx context.Context, tx Store) (int, error) {
	e, ent := w.g.Env.e, w.g.Ent
	var gone []goneRecord
	found := map[int64]bool{}
	for _, of := range w.p.Of {
		for _, ref := range w.ownerRefs(of) {
			rows, err := tx.ownedRows(ctx, ent, ref, nil, true)
			if err != nil {
				return 0, err
			}
			for _, r := range rows {
				if !found[r.id] {
					found[r.id] = true
					gone = append(gone, r.goneRecord)
				}
			}
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	c := status.Change{Reason: "deleted on the portal with the record it belongs to", Code: CodeParentDeleted,
		Actor: e.actor, RunID: e.runID}
	return e.markGone(ctx, tx, ent, gone, c)
}
