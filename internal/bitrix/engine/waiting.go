package engine

import (
	"context"
)

// A child record that waits for its parent (NEW, its parent not IMPORT_OK) cannot be accepted
// on its own: only a failed record can be acknowledged, and it goes by itself once its parent is
// imported. Verify therefore lists it with its parent, as a count on the parent's line ("N
// records wait for it"), not as a record of its own a person would try to acknowledge in vain;
// acknowledging the parent excuses it (excused).

// countWaiting sets, on every record the report lists of the family's parents, how many child
// records wait for it.
func (e *Engine) countWaiting(ctx context.Context, family []*Entity, r *VerifyReport) error {
	lists := []*[]RecordIssue{&r.NotImported, &r.Unreachable, &r.UnresolvedRefs, &r.Acknowledged}
	for i := range r.Children {
		lists = append(lists, &r.Children[i].NotImported)
	}
	for _, child := range family {
		if child.Parent == "" {
			continue
		}
		var parents []string
		for _, l := range lists {
			for _, is := range *l {
				if is.Entity == child.Parent {
					parents = append(parents, is.SourceID)
				}
			}
		}
		if len(parents) == 0 {
			continue
		}
		n, err := e.store().waitingFor(ctx, child, parents)
		if err != nil {
			return err
		}
		for _, l := range lists {
			for j := range *l {
				if is := &(*l)[j]; is.Entity == child.Parent {
					is.Waiting += n[is.SourceID]
				}
			}
		}
	}
	return nil
}
