package engine

import (
	"context"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The plan of a rerun counts what Migrate's prefetch (prefetch.go) changes: each entity's pass
// sends fewer requests of its own, the commands it begins with being answered from the
// prefetch, and the prefetch sends its commands, 50 to a request, round by round, ahead of
// every entity (Plan.PrefetchCalls).

// AheadPlanner is a Prefetcher outside the engine that says, for `bitrix plan`, what the
// prefetch of its next pass costs and saves: the requests of the pass its commands answer
// (served), and how many commands it asks in each round. The engine's own listers are planned
// by the engine.
type AheadPlanner interface {
	Prefetcher
	PlanAhead(ctx context.Context, env Env, ent *Entity) (served, round1, round2 int, err error)
}

// aheadPlan adds up, while a rerun is planned, the commands the prefetch will ask in each round.
type aheadPlan struct {
	rounds [prefetchRounds]int
}

// requests is how many requests the prefetch sends: each round's commands 50 to a request.
func (a *aheadPlan) requests() int {
	n := 0
	for _, c := range a.rounds {
		n += CeilDiv(int64(c), rest.MaxBatch)
	}
	return n
}

// ask counts commands of a round.
func (a *aheadPlan) ask(round, commands int) {
	if a != nil && commands > 0 {
		a.rounds[round-1] += commands
	}
}

// planAheadOf counts in the plan of a rerun what the prefetch asks for ent beyond its lister
// (the custom fields' read) and, for a lister outside the engine (AheadPlanner), what it asks
// and saves: its line's calls less the requests served.
func (e *Engine) planAheadOf(ctx context.Context, ent *Entity, plans []EntityPlan) error {
	a := e.planAhead
	if a == nil {
		return nil
	}
	if ent.Fields != nil && ent.Parent == "" {
		a.ask(1, 1)
	}
	l, ok := ent.Lister.(AheadPlanner)
	if !ok {
		return nil
	}
	served, r1, r2, err := l.PlanAhead(ctx, e.env(), ent)
	if err != nil {
		return fmt.Errorf("plan %s: %w", ent.Name, err)
	}
	a.ask(1, r1)
	a.ask(2, r2)
	for i := range plans {
		if plans[i].Entity == ent.Name {
			plans[i].Calls = max(0, plans[i].Calls-served)
			plans[i].How += fmt.Sprintf("; %d of its requests answered by the rerun's prefetch", served)
		}
	}
	return nil
}
