package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// PortalCount is a child entity's optional hook (Entity.ChildCount) giving the portal's count of
// its records per parent, for a child no listing counts as a whole (the messages of each
// conversation). With it verify compares, parent by parent, what get read with what the portal
// holds now, and accounts for the child on its own: read, by status, excused, on the target, not
// imported.
type PortalCount struct {
	// Summary names the children beside their parent in verify's problems and in the one-line
	// summary of a clean report ("messages"); empty means the entity's noun.
	Summary string
	// Count asks the portal how many children each of the parents (source ids of readable
	// parent records, in record order) holds, and hands each answer to fn, one at a time.
	Count func(ctx context.Context, env Env, parents []string, fn func(ParentCount)) error
}

// ParentCount is the portal's answer for one parent: its children's count, or why it no
// longer shows the parent.
type ParentCount struct {
	// Parent is the parent's source id.
	Parent string
	// Count is how many children the portal holds for the parent.
	Count int64
	// Gone, when set, is the portal's refusal to show the parent now: verify reports it instead
	// of comparing a count.
	Gone *Unreachable
}

// verifyCountedChild compares a child entity that has a PortalCount with the portal's count of
// every readable parent and with the target, and lists its records not imported.
func (e *Engine) verifyCountedChild(ctx context.Context, child *Entity, r *VerifyReport) error {
	parent := e.Entity(child.Parent)
	noun := child.noun()
	if child.ChildCount.Summary != "" {
		noun = child.ChildCount.Summary
	}
	m := ChildCounts{Entity: child.Name, Summary: child.ChildCount.Summary}
	var err error
	if m.ByStatus, _, err = e.store().countByStatus(ctx, child.Name); err != nil {
		return fmt.Errorf("verify %s: %w", child.Name, err)
	}
	for _, n := range m.ByStatus {
		m.Read += n
	}
	// Children of an acknowledged parent (or acknowledged themselves) are not expected on the
	// target.
	if m.Excused, err = e.store().countExcused(ctx, child); err != nil {
		return err
	}
	stored, err := e.store().countByParent(ctx, child.Name)
	if err != nil {
		return err
	}
	parents, err := e.store().readableIDs(ctx, parent)
	if err != nil {
		return err
	}
	behind := 0
	err = child.ChildCount.Count(ctx, e.env(), parents, func(c ParentCount) {
		if c.Gone != nil {
			r.Problem("%s %s can no longer be read (%s): run get again", singular(parent.noun()), c.Parent, c.Gone.Code)
			return
		}
		m.Source += c.Count
		if got := stored[c.Parent]; got < c.Count {
			behind++
			if len(m.Short) < MaxListed {
				m.Short = append(m.Short, ParentCounts{Parent: c.Parent, Source: c.Count, Read: got, Target: -1})
			}
		}
	})
	if err != nil {
		return err
	}
	slices.SortFunc(m.Short, func(a, b ParentCounts) int { return strings.Compare(a.Parent, b.Parent) })
	if behind > 0 {
		r.Problem("%d %s have more %s on the portal than were read (run get again)", behind, parent.noun(), noun)
	}
	if m.Target, err = e.target.Count(ctx, child.Name); err != nil {
		return fmt.Errorf("verify %s: %w", child.Name, err)
	}
	if m.Target != m.Read-m.Excused {
		r.Problem("target holds %d %s, %d were read (%d of them excused)", m.Target, child.noun(), m.Read, m.Excused)
	}
	if n := m.Read - m.ByStatus[string(ImportOK)] - m.Excused; n > 0 {
		r.Problem("%d %s are not IMPORT_OK", n, child.noun())
		if m.NotImported, err = e.store().notImported(ctx, child); err != nil {
			return err
		}
	}
	r.Children = append(r.Children, m)
	return nil
}

// verifyListCoverage checks a reference whose field holds a list of ids (Ref.Listed): how many
// ids the entity's records hold, how many have a target id, and which records hold ones that do
// not. Records out of reach and excused ones are left out.
func (e *Engine) verifyListCoverage(ctx context.Context, ent *Entity, ref Ref, r *VerifyReport) error {
	c, err := e.store().listCoverage(ctx, ent, ref)
	if err != nil {
		return fmt.Errorf("verify %s %s: %w", ent.Name, ref.name(), err)
	}
	if n := c.Total - c.Mapped; n > 0 {
		r.Problem("%d of %d %s %s have no target id (%s not imported)", n, c.Total, singular(ent.noun()), ref.name(), ref.Entity)
	}
	r.References = append(r.References, c)
	return nil
}
