package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/ingest-dev/ingest/internal/status"
)

// In a delta pass (pass.go) the children a page of parents brings (ChildFetch: a workgroup's
// members, a task's checklist and comments) are read only for the parents that may have changed,
// and a parent whose children were read again concludes at once, in the transaction that stores
// them, that its stored children the portal no longer returned were deleted there: the generic
// conclusion (deletions.go: unseen since the pass started) cannot see them, since a delta pass
// does not read the children of the parents it did not read.
//
// A full pass reads the children of every parent and concludes none per parent, as it did before
// delta passes (a child deleted under a parent that stays is concluded by a delta pass only).
//
// No mass-delete refusal applies per parent: what it guards against is a permission change
// taking away part of a listing, which looks like many deletions; a child fetch answers for one
// parent at a time, all of its children at once (no paging), and a parent whose children the
// webhook's user may no longer see is refused (ChildFetch.Refused: kept, not concluded) or no
// longer listed itself (then concluded with its parent, which the refusal does guard).

// childReads says which rows of a walk's pages have their ChildFetch children read with them.
type childReads uint8

const (
	// childrenByPass, the zero value, is as the get's pass (GetRun.Pass) says: in a full pass the
	// children of every row, each parent concluding its children's deletions (a comment deleted
	// under a task still on the portal is found by the next full pass, whatever moved or not);
	// in a delta pass as childrenOfEvery.
	childrenByPass childReads = iota
	// childrenOfEvery reads the children of every row, each parent concluding its children's
	// deletions: the rows a modified-filter scan returns, each of which may have changed
	// children even when its checksum did not move (a parent's activity fields are Volatile).
	childrenOfEvery
	// childrenOfChanged reads the children of new rows and of rows whose stored checksum differs
	// (or that were deleted), each concluding its children's deletions: the rows of a delta
	// pass's re-listing of an ID range, listed because the range's count differed, not because
	// they changed (a row whose activity alone moved was returned by the filtered scan).
	childrenOfChanged
)

// childrenRead is what a page's fetch of one child entity read in full: the parents whose
// children the portal returned (ChildFetch.fetch), and those children.
type childrenRead struct {
	child   *Entity
	parents []string
	kids    []Incoming
}

// parentsToRead returns the rows of a page whose children are read with it, and whether each of
// those parents concludes its children's deletions (childReads).
func (w *rangeWalk) parentsToRead(ctx context.Context, recs []Incoming) ([]Incoming, bool, error) {
	how := w.children
	if how == childrenByPass {
		how = childrenOfEvery
	}
	if how == childrenOfEvery || len(recs) == 0 {
		return recs, true, nil
	}
	changed, err := w.g.Env.e.store().changedOf(ctx, w.g.Ent.Name, recs)
	return changed, true, err
}

// fetchChildren reads the ChildFetch children of the parents, entity by entity; when conclude is
// set, what each read in full is returned for the page to conclude (Page.reread).
func (e *Engine) fetchChildren(ctx context.Context, ent *Entity, parents []Incoming, conclude bool, zone *time.Location) ([]EntityRecords, []childrenRead, error) {
	var batch []EntityRecords
	var reread []childrenRead
	for _, child := range e.registry.Children(ent) {
		if child.Fetch == nil {
			continue
		}
		kids, read, err := child.Fetch.fetch(ctx, e, child, parents, zone)
		if err != nil {
			return nil, nil, err
		}
		batch = append(batch, EntityRecords{child, kids})
		if conclude {
			reread = append(reread, childrenRead{child: child, parents: read, kids: kids})
		}
	}
	return batch, reread, nil
}

// concludeChildren moves, in the page's transaction tx, the stored live children of the parents
// read in full that the portal did not return (and their own children) to DELETED_AT_SOURCE; it
// returns how many records it moved.
func (e *Engine) concludeChildren(ctx context.Context, tx Store, r childrenRead) (int, error) {
	if len(r.parents) == 0 {
		return 0, nil
	}
	seen := make([]string, len(r.kids))
	for i, k := range r.kids {
		seen[i] = k.sourceID
	}
	gone, err := tx.unlistedChildren(ctx, r.child.Name, r.parents, seen)
	if err != nil || len(gone) == 0 {
		return 0, err
	}
	parent := singular(e.Entity(r.child.Parent).noun())
	c := status.Change{Reason: fmt.Sprintf("deleted on the portal: its %s's %s, read again, no longer hold it", parent, r.child.noun()),
		Code: CodeDeletedAtSource, Actor: e.actor, RunID: e.runID}
	return e.markGone(ctx, tx, r.child, gone, c)
}

// markGone moves records of ent to DELETED_AT_SOURCE with the change c, their children
// following, and clears the VERIFIED flag that covers them; it returns how many records it moved.
func (e *Engine) markGone(ctx context.Context, tx Store, ent *Entity, gone []goneRecord, c status.Change) (int, error) {
	n, err := tx.markDeleted(ctx, ent.Name, gone, c)
	if err != nil {
		return n, err
	}
	ids := make([]string, len(gone))
	for i, g := range gone {
		ids[i] = g.sourceID
	}
	m, err := e.deleteChildren(ctx, tx, ent, ids)
	if err != nil {
		return n + m, err
	}
	return n + m, tx.unverify(ctx, verifiedAs(e.registry, ent))
}
