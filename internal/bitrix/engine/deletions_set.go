package engine

import (
	"context"
	"fmt"

	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// CodeDeletedOnTarget is the reason code of a record set removed from the target, and
// CodeLinkDeleted that of a record sent again because a record it links to was removed.
const (
	CodeDeletedOnTarget = "deleted_on_target"
	CodeLinkDeleted     = "link_deleted_on_target"
)

// propagateDeletions, under BITRIX_DELETIONS=propagate, removes the family's records deleted on
// the portal from the target through import.<entity>.delete, 100 keys to a call, and moves each
// removed one (deleted, or not_found: already gone) to DELETED_ON_TARGET, its id map row dropped,
// in one transaction per call. A call repeated after a kill answers not_found for what the first
// removed, so the outcome is the same. Records of any entity whose DropGone links name a
// removed record go back to NEW, to be sent again without the link (the target rewrites no
// record it is not sent). A key the target refuses stays DELETED_AT_SOURCE, logged; verify
// names it until a later set removes it.
func (e *Engine) propagateDeletions(ctx context.Context, family []*Entity) error {
	if e.deletions != DeletionsPropagate {
		return nil
	}
	for _, m := range family {
		removed, refused := 0, 0
		for after := int64(0); ; {
			recs, err := e.store().pendingDeletions(ctx, m.Name, after, importapi.MaxItems)
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				break
			}
			after = recs[len(recs)-1].id
			keys := make([]string, len(recs))
			for i, g := range recs {
				keys[i] = idempotencyKey(m.Name, g.sourceID)
			}
			results, err := e.target.Delete(ctx, m.Name, keys)
			if err != nil {
				return fmt.Errorf("set %s: remove the records deleted on the portal from the target: %w", m.Name, err)
			}
			var done []goneRecord
			for i, res := range results {
				if res.Error != nil {
					refused++
					e.log.Warn("the target refused to delete a record deleted on the portal", "entity", m.Name,
						"id", recs[i].sourceID, "error", res.Error.Error())
					continue
				}
				done = append(done, recs[i])
			}
			if err := e.removed(ctx, m, done); err != nil {
				return err
			}
			removed += len(done)
			e.metrics.Processed.WithLabelValues(m.Name, string(DeletedOnTarget)).Add(float64(len(done)))
		}
		if removed+refused > 0 {
			e.log.Info("deletions propagated to the target", "entity", m.Name, "removed", removed, "refused", refused)
		}
	}
	return nil
}

// removed records, in one transaction, that the target no longer holds the records: their
// status, their id map rows, and the records linking to them sent again.
func (e *Engine) removed(ctx context.Context, ent *Entity, recs []goneRecord) error {
	if len(recs) == 0 {
		return nil
	}
	ids := make([]int64, len(recs))
	sourceIDs := make([]string, len(recs))
	for i, g := range recs {
		ids[i], sourceIDs[i] = g.id, g.sourceID
	}
	return e.store().Tx(ctx, func(tx Store) error {
		c := status.Change{Reason: "deleted on the portal and removed from the target (BITRIX_DELETIONS=propagate)",
			Code: CodeDeletedOnTarget, Actor: e.actor, RunID: e.runID}
		if _, err := Machine.MoveMany(ctx, tx.db, ids, DeletedAtSource, DeletedOnTarget, c); err != nil {
			return fmt.Errorf("set %s: %w", ent.Name, err)
		}
		if err := tx.dropIDMap(ctx, ent.Name, sourceIDs); err != nil {
			return err
		}
		for _, other := range e.registry.All() {
			for _, ref := range other.Refs {
				if ref.Entity != ent.Name || !ref.DropGone || ref.Values != nil {
					continue
				}
				c := status.Change{Reason: fmt.Sprintf("its %s was deleted on the portal and removed from the target: sent again without the link",
					ref.name()), Code: CodeLinkDeleted, Actor: e.actor, RunID: e.runID}
				n, err := tx.resendLinking(ctx, other.Name, ref.Field, sourceIDs, c)
				if err != nil {
					return err
				}
				if n > 0 {
					if err := tx.unverify(ctx, other.Name); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}
