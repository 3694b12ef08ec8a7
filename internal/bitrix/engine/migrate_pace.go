package engine

import (
	"context"
	"time"
)

// pace is what a migration measured so far in its run of the phases the plan cannot price: the
// time its entities took outside get (fields, set, verify: the target's share, and verify's
// reading of the records) and how many records those entities hold. The time left is get's
// calls at the rate, from the plan, plus the records left at this measured pace.
type pace struct {
	seconds float64
	records int64
}

// add counts one entity's time outside get and the records of its family.
func (p *pace) add(ctx context.Context, e *Engine, ent *Entity, took time.Duration) {
	p.seconds += took.Seconds()
	for _, f := range e.registry.Family(ent) {
		if _, n, err := e.store().countByStatus(ctx, f.Name); err == nil {
			p.records += n
		}
	}
}

// eta returns the log attributes of the time left: plan_eta_s, get's share at the rate, and
// eta_s, the whole of it once an entity has been measured (eta_basis says which).
func (p pace) eta(getSeconds float64, recordsLeft int64) []any {
	attrs := []any{"plan_eta_s", round1(getSeconds)}
	if p.records == 0 {
		return append(attrs, "eta_s", round1(getSeconds), "eta_basis", "plan: get only, until an entity's set and verify are measured")
	}
	rest := float64(recordsLeft) * p.seconds / float64(p.records)
	return append(attrs, "eta_s", round1(getSeconds+rest), "eta_basis", "plan for get, this run's pace for set and verify",
		"set_verify_ms_per_record", round1(1000*p.seconds/float64(p.records)))
}
