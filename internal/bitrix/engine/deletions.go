package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ingest-dev/ingest/internal/status"
)

// Deletions on the portal are an outcome of the migration, not an error: a complete get pass that
// no longer sees a record moves it, and the records of its children, to DELETED_AT_SOURCE; set
// then keeps it on the target or removes it there (Config.Deletions), and verify counts it apart.
// The pass is generic: every entity whose lister reads the whole portal concludes it; a lister
// that cannot (PartialLister), a pass cut short or limited by test_limit never does.

// Deletions is what set does with the records the portal deleted (BITRIX_DELETIONS).
type Deletions string

const (
	// DeletionsKeep leaves them on the target; verify counts them apart and passes. The default.
	DeletionsKeep Deletions = "keep"
	// DeletionsPropagate has set remove them (and their children) from the target through
	// import.<entity>.delete; they end in DELETED_ON_TARGET.
	DeletionsPropagate Deletions = "propagate"
)

// ParseDeletions reads a BITRIX_DELETIONS value; empty is keep.
func ParseDeletions(s string) (Deletions, error) {
	switch d := Deletions(s); d {
	case "", DeletionsKeep:
		return DeletionsKeep, nil
	case DeletionsPropagate:
		return d, nil
	}
	return "", fmt.Errorf("BITRIX_DELETIONS must be %s or %s, got %q", DeletionsKeep, DeletionsPropagate, s)
}

// MassDeletePercent is the share of an entity's records (in percent) a get may mark deleted at
// once without AllowMassDelete: more is far likelier a permission change on the portal (the
// webhook's user lost access to a funnel, a project) than people deleting records, and must
// not empty the target.
const MassDeletePercent = 10

// ErrMassDelete is the refusal of a get that would mark too many records deleted (MassDeleteError).
var ErrMassDelete = errors.New("refusing to mark so many records deleted at the source")

// MassDeleteError is a get's refusal to mark more than MassDeletePercent of an entity's
// records deleted; nothing was marked.
type MassDeleteError struct {
	Entity string
	// Gone of the entity's Live records (those not already deleted) were not seen by the pass.
	Gone, Live int64
}

func (e *MassDeleteError) Error() string {
	return fmt.Sprintf("%s: the portal no longer lists %d of the %d %s read before (more than %d%%): refusing to mark them "+
		"deleted at the source, since a permission change on the portal looks the same; check the webhook user's access, "+
		"or run get again with --allow-mass-delete (BITRIX_ALLOW_MASS_DELETE=true) if they were deleted",
		e.Entity, e.Gone, e.Live, e.Entity, MassDeletePercent)
}

// Is makes errors.Is(err, ErrMassDelete) true.
func (e *MassDeleteError) Is(target error) bool { return target == ErrMassDelete }

// PartialLister is a Lister whose complete pass still may not see every record the portal has
// (only what the webhook's user takes part in: a record it left is not deleted). Partial says why, or
// nothing when it can conclude after all; the records such a lister does not see are never
// concluded deleted.
type PartialLister interface {
	Lister
	Partial() string
}

// OwnedLister is a Lister that reads an entity record by record of other entities, its owners
// (PerRecord: the rows read per owner record). When an owner is deleted its
// records vanish with it: they follow it, and do not count towards the mass-delete refusal.
type OwnedLister interface {
	Lister
	Owners() []string
}

// Owners makes PerRecord an OwnedLister.
func (p *PerRecord) Owners() []string { return p.Of }

// Reason codes of the records the deletion pass moves (status_history, reason_code).
const (
	CodeDeletedAtSource = "deleted_at_source"
	CodeParentDeleted   = "parent_deleted_at_source"
)

// deletedStatuses are the statuses of records the portal no longer has.
var deletedStatuses = []status.Status{DeletedAtSource, DeletedOnTarget}

// IsDeleted reports whether a status is one of a record the portal deleted.
func IsDeleted(s status.Status) bool { return slices.Contains(deletedStatuses, s) }

// concludeDeletions ends a get of ent: when its pass read the whole portal, the records it did not
// see move to DELETED_AT_SOURCE, with the records of their children, in one transaction. It
// refuses (MassDeleteError) when they are more than MassDeletePercent of the records, unless
// AllowMassDelete.
func (e *Engine) concludeDeletions(ctx context.Context, ent *Entity) (int, error) {
	if why, ok := e.cannotConclude(ctx, ent); ok {
		e.log.Debug("no deletions concluded", "entity", ent.Name, "why", why)
		return 0, nil
	}
	inv, err := e.store().loadInventory(ctx, ent.Name)
	if err != nil {
		return 0, err
	}
	s := e.store()
	// A delta pass concludes only in the ID ranges it listed again (deletions_delta.go).
	u, err := e.unseenOfPass(ctx, ent, inv)
	if err != nil || len(u.gone) == 0 {
		return 0, err
	}
	gone, live := u.gone, u.live
	gone, followers, err := e.splitFollowers(ctx, ent, gone)
	if err != nil {
		return 0, err
	}
	// Confirmed before the refusal is weighed: a pass that missed records the portal still has
	// (a page answered empty) must not fail the get, and a permission change still refuses, since
	// the records the webhook's user no longer sees are not answered by id either.
	tooMany := func(n int) bool {
		return int64(n)*100 > (live-int64(len(followers)))*MassDeletePercent && !e.allowMassDelete
	}
	refuse := &MassDeleteError{Entity: ent.Name, Gone: int64(len(gone)), Live: live - int64(len(followers))}
	if tooMany(len(gone)) {
		// Asking for every one of 100,000 records a permission change hid would take 2,000 requests
		// (when the portal is asked one id a command) before refusing: a sample decides first.
		mostlyGone, err := u.sample(ctx, e, ent, gone)
		if err != nil {
			return 0, err
		}
		if mostlyGone {
			return 0, refuse
		}
	}
	if gone, err = u.confirm(ctx, e, ent, gone); err != nil || len(gone)+len(followers) == 0 {
		return 0, err
	}
	if tooMany(len(gone)) {
		refuse.Gone = int64(len(gone))
		return 0, refuse
	}
	moved := 0
	err = s.Tx(ctx, func(tx Store) error {
		moved = 0
		c := status.Change{Reason: u.reason(inv.Pass), Code: CodeDeletedAtSource, Actor: e.actor, RunID: e.runID}
		n, err := tx.markDeleted(ctx, ent.Name, gone, c)
		if err != nil {
			return err
		}
		moved += n
		c.Reason, c.Code = "deleted on the portal with the record it belongs to", CodeParentDeleted
		if n, err = tx.markDeleted(ctx, ent.Name, followers, c); err != nil {
			return err
		}
		moved += n
		all := append(slices.Clip(gone), followers...)
		sourceIDs := make([]string, len(all))
		for i, g := range all {
			sourceIDs[i] = g.sourceID
		}
		n, err = e.deleteChildren(ctx, tx, ent, sourceIDs)
		moved += n
		if err != nil {
			return err
		}
		// A walked child counts what it stored as the portal's total (finishWalk): its walk ended
		// before its deleted records were known, so its total is counted again.
		for _, child := range e.registry.Children(ent) {
			if child.Walk != nil {
				if err := tx.recountWalked(ctx, child.Name); err != nil {
					return err
				}
			}
		}
		return tx.unverify(ctx, ent.Name)
	})
	if err != nil {
		return 0, fmt.Errorf("mark deleted %s: %w", ent.Name, err)
	}
	e.metrics.Processed.WithLabelValues(ent.Name, string(DeletedAtSource)).Add(float64(moved))
	e.log.Warn("records deleted on the portal", "entity", ent.Name, "count", len(gone), "with_their_owner", len(followers), "with_children", moved-len(gone)-len(followers),
		"policy", e.deletions)
	return moved, nil
}

// cannotConclude says why the entity's last get cannot conclude deletions, if it cannot.
func (e *Engine) cannotConclude(ctx context.Context, ent *Entity) (string, bool) {
	if p, ok := ent.Lister.(PartialLister); ok && p.Partial() != "" {
		return p.Partial(), true
	}
	if e.testLimit > 0 {
		return "test_limit", true
	}
	inv, err := e.store().loadInventory(ctx, ent.Name)
	switch {
	case err != nil:
		return err.Error(), true
	case inv.Pass == 0 || !inv.Complete || inv.StartedAt == nil:
		return "the get pass is not complete", true
	case inv.Limit != nil:
		return "the get pass ran with test_limit", true
	}
	if _, owned := ent.Lister.(OwnedLister); owned && inv.Kind == PassDelta {
		return "a delta pass of records read per owner concludes them owner by owner (perrecord_delta.go)", true
	}
	return "", false
}

// deleteChildren moves the records of ent's children (and theirs) whose parents are among
// sourceIDs to DELETED_AT_SOURCE: a child cannot outlive its parent.
func (e *Engine) deleteChildren(ctx context.Context, tx Store, ent *Entity, sourceIDs []string) (int, error) {
	moved := 0
	for _, child := range e.registry.Children(ent) {
		c := status.Change{Reason: fmt.Sprintf("its %s was deleted on the portal", singular(ent.noun())),
			Code: CodeParentDeleted, Actor: e.actor, RunID: e.runID}
		ids, err := tx.markChildrenDeleted(ctx, child.Name, sourceIDs, c)
		if err != nil {
			return moved, err
		}
		moved += len(ids)
		n, err := e.deleteChildren(ctx, tx, child, ids)
		moved += n
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// singular is a noun's singular, good enough for the registry's plural entity names.
func singular(noun string) string {
	if len(noun) > 1 && noun[len(noun)-1] == 's' {
		return noun[:len(noun)-1]
	}
	return noun
}

// splitFollowers parts the records a pass of an OwnedLister did not see into those whose owner
// the portal deleted (followers) and the others.
func (e *Engine) splitFollowers(ctx context.Context, ent *Entity, gone []goneRecord) (others, followers []goneRecord, err error) {
	ol, ok := ent.Lister.(OwnedLister)
	if !ok || len(gone) == 0 {
		return gone, nil, nil
	}
	ids := make([]int64, len(gone))
	for i, g := range gone {
		ids[i] = g.id
	}
	owned, err := e.store().linksToDeleted(ctx, ent, ol.Owners(), ids)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range gone {
		if owned[g.id] {
			followers = append(followers, g)
		} else {
			others = append(others, g)
		}
	}
	return others, followers, nil
}

// confirmSample is how many unseen records sampleGone asks for: one batch request at most.
const confirmSample = 50

// sampleGone asks a Confirmer for confirmSample of the unseen records, spread over them, and
// reports whether most of those are gone (a pass that missed records finds them still there).
// It reports false for a lister that cannot confirm.
func (e *Engine) sampleGone(ctx context.Context, ent *Entity, gone []goneRecord) (bool, error) {
	if _, ok := ent.Lister.(Confirmer); !ok || len(gone) == 0 {
		return false, nil
	}
	n := min(len(gone), confirmSample)
	sample := make([]goneRecord, n)
	for i := range sample {
		sample[i] = gone[i*len(gone)/n]
	}
	confirmed, err := e.confirmGone(ctx, ent, sample)
	if err != nil {
		return false, err
	}
	e.log.Info("unseen records sampled by id before weighing a mass deletion", "entity", ent.Name,
		"unseen", len(gone), "asked", n, "gone", len(confirmed))
	return len(confirmed)*2 > n, nil
}

// confirmGone keeps, for a Confirmer, only the records the portal confirms are gone.
func (e *Engine) confirmGone(ctx context.Context, ent *Entity, gone []goneRecord) ([]goneRecord, error) {
	c, ok := ent.Lister.(Confirmer)
	if !ok || len(gone) == 0 {
		return gone, nil
	}
	ids := make([]string, len(gone))
	for i, g := range gone {
		ids[i] = g.sourceID
	}
	confirmed, err := c.ConfirmGone(ctx, e.env(), ent, ids)
	if err != nil {
		return nil, fmt.Errorf("get %s: confirm the records the pass did not see: %w", ent.Name, err)
	}
	out := gone[:0:0]
	for _, g := range gone {
		if slices.Contains(confirmed, g.sourceID) {
			out = append(out, g)
		}
	}
	if missed := len(gone) - len(out); missed > 0 {
		e.log.Info("records the pass missed are still on the portal: left as they are, the next get reads them",
			"entity", ent.Name, "count", missed)
	}
	return out, nil
}
