package engine

import (
	"context"
	"fmt"
)

// listAcknowledged puts the family's acknowledged records in the report, with who accepted
// them and why, and counts the children waiting for an acknowledged parent.
func (e *Engine) listAcknowledged(ctx context.Context, family []*Entity, r *VerifyReport) error {
	names := make([]string, len(family))
	for i, m := range family {
		names[i] = m.Name
	}
	issues, err := e.store().acknowledgedOf(ctx, names)
	if err != nil {
		return fmt.Errorf("list acknowledged %v: %w", names, err)
	}
	r.AcknowledgedCount = int64(len(issues))
	r.Acknowledged = issues[:min(len(issues), MaxListed)]
	for _, m := range family {
		if m.Parent == "" {
			continue
		}
		n, err := e.store().countWaitingForAcknowledged(ctx, m)
		if err != nil {
			return fmt.Errorf("count %s waiting for acknowledged %s: %w", m.Name, m.Parent, err)
		}
		r.AcknowledgedWaiting += n
	}
	return nil
}
