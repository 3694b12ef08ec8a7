package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Plan is what get is expected to cost, entity by entity, so that a team can book its
// migration window: records on the portal, the HTTP calls get will send for them, and the time
// those take at the portal's rate.
type Plan struct {
	// Rate is the leaky bucket the times are computed for.
	Rate string `json:"rate"`
	// Entities are in migration order, each command entity followed by its children.
	Entities []EntityPlan `json:"entities"`
	// Calls and Seconds add up the entities'.
	Calls   int     `json:"calls"`
	Seconds float64 `json:"seconds"`
	// PlanCalls is what asking cost: the calls the plan itself sent.
	PlanCalls int `json:"plan_calls"`
	// VerifyCalls adds up the entities' verify calls.
	VerifyCalls int `json:"verify_calls"`
	// MigrateCalls is what `bitrix migrate` sends the portal: get's and verify's calls, and
	// the plan it makes before it starts (as many as PlanCalls: it asks the same), except on a
	// rerun, where it asks no plan (every entity's last pass complete). Set sends the portal
	// nothing. MigrateSeconds is their time at the rate.
	MigrateCalls   int     `json:"migrate_calls"`
	MigrateSeconds float64 `json:"migrate_seconds"`
	// PrefetchCalls, on a rerun, is what Migrate's prefetch sends ahead of every entity (in
	// MigrateCalls): the commands the passes begin with, 50 to a request (prefetch.go); the
	// entities' Calls leave out the requests those answer.
	PrefetchCalls int `json:"prefetch_calls,omitempty"`
}

// EntityPlan is the plan of one entity.
type EntityPlan struct {
	Entity string `json:"entity"`
	// Records is how many the portal holds; -1 when it cannot say without reading them.
	Records int64 `json:"records"`
	// Calls is how many HTTP calls get will send for them.
	Calls int `json:"calls"`
	// Seconds is the least time those calls take at the rate: every one waits its turn at the
	// drain rate (a bucket with room shortens it by up to its burst).
	Seconds float64 `json:"seconds"`
	// How says how the figures were obtained.
	How string `json:"how"`
	// VerifyCalls is how many calls verify sends the portal for the entity: its count
	// (Lister.Total) and what the entity's own checks read again.
	VerifyCalls int `json:"verify_calls"`
	// Pass is the kind of the entity's next get pass, full or delta (pass.go), and PassReason
	// why, as get will decide it from the last pass's inventory; Calls are that pass's.
	Pass       PassKind `json:"pass"`
	PassReason string   `json:"pass_reason"`
	// Changed is, for a delta pass, how many records it reads: the portal's counts of those
	// modified since the last complete pass.
	Changed int64 `json:"changed,omitempty"`
}

// Plan asks the portal how large each entity is, with one cheap call per entity (a count of a
// one-row page), and per parent where children have no count of their own, and works out the
// calls and time get will need at rate. Entities listed by a lister that has no count
// are planned by reading their cheapest listing. It sends nothing to the target.
func (e *Engine) Plan(ctx context.Context, rate rest.Rate) (Plan, error) {
	return e.planOf(ctx, rate, e.registry.Commands())
}

// planOf is the plan of the command entities ents: migrate plans only what it runs.
func (e *Engine) planOf(ctx context.Context, rate rest.Rate, ents []*Entity) (Plan, error) {
	before := e.stats()
	p := Plan{Rate: rate.String()}
	e.planning = map[string]EntityPlan{} // the lines so far, for the passes of what they own
	rerun, err := e.isRerun(ctx, ents)
	if err != nil {
		return p, err
	}
	if rerun { // Migrate asks the passes' first commands up front (prefetch.go)
		e.planAhead = &AheadPlan{}
		e.planAhead.Ask(1, true, len(e.webhookCommands()))
	}
	defer func() { e.planning, e.planAhead = nil, nil }()
	planned := map[string]int64{} // records on the portal by entity, for the walks' keys
	for _, ent := range ents {
		plans, err := ent.Lister.Plan(ctx, e.env(), ent)
		if err != nil {
			return p, fmt.Errorf("plan %s: %w", ent.Name, err)
		}
		// The walks of ent's children are keyed by what its lister reads: they see its count.
		for _, ep := range plans {
			if ep.Records >= 0 {
				planned[ep.Entity] += ep.Records
			}
		}
		listed := len(plans)
		for _, child := range e.registry.Children(ent) {
			switch {
			case child.Lister != nil:
				more, err := child.Lister.Plan(ctx, e.env(), child)
				if err != nil {
					return p, fmt.Errorf("plan %s: %w", child.Name, err)
				}
				plans = append(plans, more...)
			case child.Walk != nil:
				records, calls, how, err := child.Walk.PlanCalls(ctx, e.env(), child, planned)
				if err != nil {
					return p, fmt.Errorf("plan %s: %w", child.Name, err)
				}
				plans = append(plans, EntityPlan{Entity: child.Name, Records: records, Calls: calls, How: how,
					Pass: PassFull, PassReason: "a walk reads every key on every pass"})
			}
		}
		if e.planAhead != nil {
			e.planAheadOf(ent)
		}
		for i, ep := range plans {
			if ep.Records >= 0 && i >= listed {
				planned[ep.Entity] += ep.Records
			}
			planFull(&ep, noDeltaReason)
			e.planning[ep.Entity] = ep
			ep.Seconds = round1(float64(ep.Calls) / rate.PerSecond)
			p.Calls += ep.Calls
			p.VerifyCalls += ep.VerifyCalls
			p.Seconds += ep.Seconds
			p.Entities = append(p.Entities, ep)
		}
	}
	p.Seconds = round1(p.Seconds)
	p.PlanCalls = int(e.stats() - before)
	p.MigrateCalls = p.Calls + p.VerifyCalls + p.PlanCalls
	if rerun {
		p.PrefetchCalls = e.planAhead.requests()
		// migrate asks no plan on a rerun (Migrate), but its prefetch
		p.MigrateCalls += p.PrefetchCalls - p.PlanCalls
	}
	p.MigrateSeconds = round1(float64(p.MigrateCalls) / rate.PerSecond)
	return p, nil
}

// Plan of an ID scan is the portal's count, then the calls of a get over that many rows (the
// first page with the count and the highest ID, whose answer also shows the portal's clock,
// the ranges' pages 50 to a request, one short page ending each range), and for children read per parent one command per
// parent, 50 to a request.
func (s *IDScan) Plan(ctx context.Context, env Env, ent *Entity) ([]EntityPlan, error) {
	e := env.e
	n, err := estimated(s.Total(ctx, e.env(), ent))
	if err != nil {
		return nil, err
	}
	pass, err := s.PlanPass(ctx, env, ent, n)
	if err != nil {
		return nil, err
	}
	out := []EntityPlan{{Entity: ent.Name, Records: n, Calls: IDScanCalls(n) - pass.Ahead, // verify takes the pass's count (noteListed)
		How:  s.Scan.Method + " count; get reads 2,500 rows per call in ID ranges",
		Pass: pass.Decision.Kind, PassReason: pass.Decision.Reason}}
	read := n // the records the pass reads, whose children it reads
	if pass.Decision.Delta() {
		read = pass.Changed
		out[0].Calls, out[0].Changed, out[0].How = pass.Calls-pass.Ahead, pass.Changed, s.Scan.Method+" "+pass.How
		if s.scope(ent) == ent.Name {
			out[0].VerifyCalls = 0 // verify in the same run counts with the ID ranges' counts (sourceTotal)
		}
		for _, child := range e.registry.Children(ent) {
			if child.Fetch != nil && child.Fetch.CountField != "" {
				out[0].Calls += max(1, CeilDiv(n, rest.PageSize*rest.MaxBatch))
				if e.planAhead != nil && s.IDPrefix == "" { // its first request, a chain asked up front
					e.planAhead.AskChain(2, int(min(n/rest.PageSize+1, rest.MaxBatch)))
					out[0].Calls--
				}
				out[0].How += fmt.Sprintf("; every record's %s listed, 2,500 a call", child.Fetch.CountField)
			}
		}
	}
	if s.CompleteMethod != "" {
		out[0].Calls += CeilDiv(read, rest.MaxBatch)
		out[0].How += fmt.Sprintf(", and one %s per record, %d to a call", s.CompleteMethod, rest.MaxBatch)
	}
	for _, child := range e.registry.Children(ent) {
		if child.Fetch == nil {
			continue
		}
		parents, how := read, ""
		if w, ok := child.Walk.(WalksParents); ok {
			walked, err := w.ParentsWalked(ctx, e.env(), n)
			if err != nil {
				return nil, err
			}
			if n > 0 && read < n { // the walk's share of the records the delta reads
				walked = (walked*read + n/2) / n
			}
			parents, how = max(0, read-walked), fmt.Sprintf(" (less the %d that the walk reads)", walked)
		}
		of := "record of " + ent.Name
		if pass.Decision.Delta() {
			of = "changed record of " + ent.Name
		}
		calls := fetchCalls(read, parents)
		if e.planAhead != nil && !pass.Decision.Delta() && calls > 0 {
			// a full pass's first page's children, asked by a rerun's prefetch (IDScan.Prefetch)
			e.planAhead.Ask(2, true, int(min(parents, rest.PageSize)))
			calls--
		}
		out = append(out, EntityPlan{Entity: child.Name, Records: -1, Calls: calls,
			How:  fmt.Sprintf("one %s per %s%s, %d to a call; no count before they are read", child.Fetch.Method, of, how, rest.MaxBatch),
			Pass: pass.Decision.Kind, PassReason: fmt.Sprintf("read with the records of %s's %s pass", ent.Name, pass.Decision.Kind)})
	}
	return out, nil
}

// WalksParents is a child's Walker that reads, for some of the parents, what its ChildFetch
// reads for the others (children kept in another listing for some parents): the plan
// counts those parents in the walk's line, not also in the fetch's.
type WalksParents interface {
	// ParentsWalked is how many of the parents the walk reads instead of the fetch: of those
	// read so far, or, before any is, an estimate for the portal's count of them (parents).
	ParentsWalked(ctx context.Context, env Env, parents int64) (int64, error)
}

// IDScanCalls is how many calls an ID-scan get of n rows sends (see newRanges).
func IDScanCalls(n int64) int {
	if n <= rest.PageSize {
		return 1
	}
	left := n - rest.PageSize
	ranges := CeilDiv(left, rangeRows)
	pages := CeilDiv(left, rest.PageSize) + ranges + 1
	return 1 + CeilDiv(int64(pages), rest.MaxBatch)
}

// fetchCalls is how many calls a ChildFetch sends in an ID-scan get of n rows, parents of which
// it is called for: get fetches the children of what each listing call read together, 50 to a
// call, the first page alone and then range by range (see newRanges), so every range rounds up.
func fetchCalls(n, parents int64) int {
	if n <= 0 || parents <= 0 {
		return 0
	}
	share := float64(parents) / float64(n)
	first := min(n, rest.PageSize)
	calls := int(math.Ceil(float64(first) * share / rest.MaxBatch))
	if left := n - first; left > 0 {
		ranges := CeilDiv(left, rangeRows)
		calls += ranges * int(math.Ceil(float64(left)/float64(ranges)*share/rest.MaxBatch))
	}
	return calls
}

// CeilDiv is n/d rounded up: calls for n rows, d to a call.
func CeilDiv(n int64, d int) int { return int(math.Ceil(float64(n) / float64(d))) }

// stats counts the requests sent to the portal so far, when the source can say.
func (e *Engine) stats() int64 {
	if s, ok := e.source.(interface{ Stats() rest.Stats }); ok {
		return s.Stats().Requests
	}
	return 0
}
