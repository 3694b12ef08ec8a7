package engine

import (
	"context"
	"errors"
	"fmt"
)

// ChildCounts is verify's account of one child entity: what the portal counts now, what get
// read, what the target holds, the records not imported, and the parents whose children fall
// short.
type ChildCounts struct {
	Entity string `json:"entity"`
	// Source is the portal's count now, -1 when it has none.
	Source int64 `json:"source"`
	Read   int64 `json:"read"`
	// Excused counts the records read that are not expected on the target (acknowledged, or
	// children of an acknowledged parent).
	Excused  int64            `json:"excused,omitempty"`
	Target   int64            `json:"target"`
	ByStatus map[string]int64 `json:"by_status,omitempty"`
	// NotImported lists records not in IMPORT_OK with the reason (up to 50; a record waiting for
	// its parent says so).
	NotImported []RecordIssue `json:"not_imported,omitempty"`
	// Missing counts the records read that the target does not hold, looked up one by one.
	Missing int64 `json:"missing,omitempty"`
	// Short lists the parents whose children fall short (up to 50): fewer read than the portal
	// counts for the parent (a count the portal gives per parent), or fewer on the target than read.
	Short []ParentCounts `json:"short,omitempty"`
	// Summary, when set, names the children in the one-line summary of a clean report, with
	// their target and read counts (children counted per parent).
	Summary string `json:"summary,omitempty"`
}

// Child returns the report's counts of one child entity.
func (r VerifyReport) Child(entity string) (ChildCounts, bool) {
	for _, c := range r.Children {
		if c.Entity == entity {
			return c, true
		}
	}
	return ChildCounts{}, false
}

// ParentCounts is one parent's children: the portal's count (-1 when not asked), what get read,
// what the target holds (-1 when not compared), and the keys of those the target lacks.
type ParentCounts struct {
	Parent         string   `json:"parent"`
	Source         int64    `json:"source"`
	Read           int64    `json:"read"`
	Target         int64    `json:"target"`
	Missing        []string `json:"missing,omitempty"`
	ParentImported bool     `json:"parent_imported,omitempty"`
}

// verifyFamily adds to verify what the engine knows about an entity's family beyond counts and
// references: the children read by listings of their own or counted per parent by the portal,
// the custom fields the target names differently, the values kept untranslated, and what the
// family's migration leaves behind by design.
func (e *Engine) verifyFamily(ctx context.Context, family []*Entity, r *VerifyReport) error {
	for i, m := range family {
		for _, what := range m.NotMigrated {
			r.NotMigrated = append(r.NotMigrated, m.Name+": "+what)
		}
		if i > 0 && m.Lister != nil {
			if err := e.verifyListedChild(ctx, m, r); err != nil {
				return err
			}
		}
		if i > 0 && m.ChildCount != nil {
			if err := e.verifyCountedChild(ctx, m, r); err != nil {
				return err
			}
		}
	}
	renamed, err := e.renamedFields(ctx, family[0])
	if err != nil {
		return err
	}
	r.RenamedFields = renamed
	if err := e.untranslatedFieldLinks(ctx, family[0], r); err != nil {
		return err
	}
	return e.untranslatedValues(ctx, family, r)
}

// verifyListedChild compares a child entity read by a listing of its own with the portal and
// the target, and lists its records that are not imported, acknowledged ones apart.
func (e *Engine) verifyListedChild(ctx context.Context, child *Entity, r *VerifyReport) error {
	total, fromRun, err := e.runTotal(ctx, child.Name)
	if fromRun || err != nil {
		if err != nil {
			return err
		}
		return e.childCounts(ctx, child, total, r)
	}
	total, err = child.Lister.Total(ctx, e.env(), child)
	switch {
	case errors.Is(err, ErrNoTotal):
		total = -1
	case err != nil:
		return fmt.Errorf("verify %s: source count: %w", child.Name, err)
	}
	return e.childCounts(ctx, child, total, r)
}

// childCounts compares a child entity with the portal's count (source, -1 for none) and the
// target, and lists its records that are not imported, acknowledged ones apart.
func (e *Engine) childCounts(ctx context.Context, child *Entity, source int64, r *VerifyReport) error {
	c := ChildCounts{Entity: child.Name, Source: source, ByStatus: map[string]int64{}}
	var err error
	if c.Target, err = e.target.Count(ctx, child.Name); err != nil {
		return fmt.Errorf("verify %s: %w", child.Name, err)
	}
	if c.ByStatus, c.Read, err = e.store().countByStatus(ctx, child.Name); err != nil {
		return fmt.Errorf("verify %s: %w", child.Name, err)
	}
	acked, err := e.store().countExcused(ctx, child)
	if err != nil {
		return err
	}
	parent := e.Entity(child.Parent)
	err = e.store().eachChildNotImported(ctx, child, parent, func(sid, status, reason, parentID string, parentOK bool) {
		if status == string(StatusNew) && !parentOK {
			reason = fmt.Sprintf("waits for its %s %s, which is not imported", parent.noun(), parentID)
		}
		c.NotImported = append(c.NotImported, RecordIssue{Entity: child.Name, SourceID: sid, Status: status, Reason: reason})
	})

	if err != nil {
		return fmt.Errorf("verify %s: %w", child.Name, err)
	}
	if n := c.Read - c.ByStatus[string(ImportOK)] - acked; n > 0 {
		r.Problem("%d %s records are not IMPORT_OK", n, child.Name)
	}
	kept, err := e.store().keptOnTarget(ctx, child.Name)
	if err != nil {
		return err
	}
	if c.Target != c.Read-acked+kept {
		r.Problem("target holds %d %s, expected %d", c.Target, child.Name, c.Read-acked+kept)
	}
	// Records a get read in an earlier pass and the portal no longer lists (a running instance that
	// completed since) stay: they are history. The portal's count now is compared with what the
	// last pass read.
	inv, err := e.store().loadInventory(ctx, child.Name)
	if err != nil {
		return err
	}
	if c.Source >= 0 && inv.Limit == nil && inv.StartedAt != nil {
		lastPass, err := e.store().countFetchedSince(ctx, child.Name, *inv.StartedAt)
		if err != nil {
			return fmt.Errorf("verify %s: %w", child.Name, err)
		}
		if lastPass != c.Source {
			r.Problem("the last get read %d %s records, the source has %d now (run get again)", lastPass, child.Name, c.Source)
		}
	}
	r.Children = append(r.Children, c)
	return nil
}
