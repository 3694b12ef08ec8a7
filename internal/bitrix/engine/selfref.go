package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// A self-reference (Entity.SelfRef: a record's parent record) cannot be translated like a reference
// to another entity: within one set, a child may come before its parent (IDs say nothing about
// which was created first once records are moved), and a child sent first would fail as
// unresolved or, worse, go without its link. get therefore keeps the referenced id in
// parent_source_id, and set picks a record only once that record is IMPORT_OK (or when it names
// none): parents first, level by level, within the same run. What is left when nothing more can
// go is failed with the reason (failOrphans), so no link is ever dropped silently.

// selfParent is the pick condition of an entity with a SelfRef: its parent of the same entity is
// IMPORT_OK, or it has none.
func selfParent(ent *Entity) status.ParentPick {
	return status.ParentPick{Column: "parent_source_id", Machine: Machine, ScopeValue: ent.Name,
		Statuses: []status.Status{ImportOK}, Optional: true}
}

// reasonParentUnavailable is the reason code of a record failOrphans failed: its parent of the
// same entity could not be imported then.
const reasonParentUnavailable = "parent_unavailable"

// reviveOrphans sends back to NEW the records failOrphans failed whose parent can now be
// imported: it was read since, or went back to NEW, or is imported. A person's acknowledgement
// of such a failure is left alone.
func (s *setter) reviveOrphans(ctx context.Context, ent *Entity) error {
	parent := status.ParentPick{Column: "parent_source_id", Machine: Machine, ScopeValue: ent.Name,
		Statuses: slices.DeleteFunc(slices.Clone(Machine.Statuses), func(s status.Status) bool { return s == ImportErr })}
	var err error
	if parent.Gone, err = selfGone(ctx, s.e.pool, ent); err != nil { // failed before the link could be dropped
		return err
	}
	moved, err := Machine.Revive(ctx, s.e.pool, status.ReviveParams{ScopeValue: ent.Name, From: ImportErr, To: StatusNew,
		Code: reasonParentUnavailable, Parent: &parent,
		Change: status.Change{Reason: "its parent can be imported now", Actor: s.e.actor, RunID: s.e.runID}})
	if err == nil && len(moved) > 0 {
		s.e.log.Info("records failed for their parent go again: the parent can be imported now", "entity", ent.Name, "count", len(moved))
	}
	return err
}

// orphan is a record that waits for a parent of its own entity that will not come.
type orphan struct {
	id                   int64
	sourceID, status     string
	parent, parentStatus string // parentStatus is "" when the parent was never read
	parentError          string
}

// failOrphans fails the records of a SelfRef entity that still wait for their parent once set
// has nothing left to do: the parent was never read (not visible to the webhook's user, deleted,
// outside test_limit), failed for good, or waits itself in a cycle. Records whose parent is in
// one of the first two states go first, with the parent's state as the reason, then their own
// children, and so on; what is left after that waits in a cycle. It returns how many it failed.
func (s *setter) failOrphans(ctx context.Context, ent *Entity) (int, error) {
	failed := 0
	for round := 0; ; round++ {
		orphans, err := s.e.store().orphans(ctx, ent)
		if err != nil || len(orphans) == 0 {
			return failed, err
		}
		var now []orphan
		for _, o := range orphans {
			if o.parentStatus == "" || o.parentStatus == string(ImportErr) {
				now = append(now, o)
			}
		}
		cycle := len(now) == 0
		if cycle {
			now = orphans // nothing settled is left to blame: they wait for each other
		}
		err = pgx.BeginFunc(ctx, s.e.pool, func(tx pgx.Tx) error {
			for _, o := range now {
				_, err := Machine.Fail(ctx, tx, o.id, status.Status(o.status),
					status.Failure{Cause: o.reason(ent, cycle), Code: reasonParentUnavailable, Now: s.e.now(), Policy: s.e.retryPolicy},
					status.Change{Actor: s.e.actor, RunID: s.e.runID})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return failed, err
		}
		failed += len(now)
		for _, o := range now {
			s.e.log.Warn("record not imported: its parent of the same entity cannot be", "entity", ent.Name,
				"source_id", o.sourceID, "parent", o.parent, "cause", o.reason(ent, cycle))
		}
		s.e.metrics.ImportErr.WithLabelValues(ent.Name).Add(float64(len(now)))
		s.mu.Lock()
		s.st.of(ent.Name).Failed += len(now)
		s.mu.Unlock()
		if cycle {
			return failed, nil
		}
	}
}

func (o orphan) reason(ent *Entity, cycle bool) string {
	noun := strings.TrimSuffix(ent.Name, "s")
	switch {
	case cycle:
		return fmt.Sprintf("%s %s: parent %s %s waits for its own parents in a cycle; neither can be imported first",
			ent.SelfRef, o.parent, noun, o.parent)
	case o.parentStatus == "":
		return fmt.Sprintf("%s %s: parent %s %s was never read from the portal (not visible to the webhook's user, deleted, or beyond test_limit); "+
			"the link cannot be kept", ent.SelfRef, o.parent, noun, o.parent)
	}
	return fmt.Sprintf("%s %s: parent %s %s is %s (%s)", ent.SelfRef, o.parent, noun, o.parent, o.parentStatus, o.parentError)
}
