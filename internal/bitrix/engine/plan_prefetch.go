package engine

import (
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The plan of a rerun counts what Migrate's prefetch (prefetch.go) changes: each entity's pass
// sends fewer requests of its own, the commands it begins with being answered from the
// prefetch, and the prefetch sends its commands, 50 to a request, round by round, ahead of
// every entity (Plan.PrefetchCalls). Each lister's Plan counts its share (AheadPlan.Ask).

// AheadPlan adds up, while a rerun is planned, the commands the prefetch will ask, by round and
// by whether a later round reads their answers (Ahead.Anytime).
type AheadPlan struct {
	needed, anytime [prefetchRounds]int
	chains          [prefetchRounds][]int
}

// AskChain counts a chain asked in a round (Ahead.Chain): a request of its own.
func (a *AheadPlan) AskChain(round, commands int) {
	if a != nil && commands > 0 && round >= 1 && round <= prefetchRounds {
		a.chains[round-1] = append(a.chains[round-1], commands)
	}
}

// Ask counts commands asked in a round: those Prefetch returns, or, with anytime, those it hands
// to Ahead.Anytime.
func (a *AheadPlan) Ask(round int, anytime bool, commands int) {
	if a == nil || commands <= 0 || round < 1 || round > prefetchRounds {
		return
	}
	if anytime {
		a.anytime[round-1] += commands
	} else {
		a.needed[round-1] += commands
	}
}

// requests is how many requests the prefetch sends, packed as prefetch packs them.
func (a *AheadPlan) requests() int {
	n, pool := 0, 0
	for r := range prefetchRounds {
		pool += a.anytime[r]
		for _, c := range a.chains[r] {
			n++
			pool -= min(pool, rest.MaxBatch-c)
		}
		cmds := a.needed[r]
		room := pool
		if r < prefetchRounds-1 {
			room = min(room, CeilDiv(int64(cmds), rest.MaxBatch)*rest.MaxBatch-cmds)
		}
		cmds, pool = cmds+room, pool-room
		n += CeilDiv(int64(cmds), rest.MaxBatch)
	}
	return n
}

// PlanAhead is, while a rerun is planned, what the plan counts of the prefetch's commands; nil
// otherwise. A Prefetcher outside the engine counts there, in its Plan, the commands it will ask
// and leaves out of its lines the requests their answers stand for.
func (v Env) PlanAhead() *AheadPlan { return v.e.planAhead }

// planAheadOf counts in the plan of a rerun what the prefetch asks for ent beyond its lister: the
// custom fields' read.
func (e *Engine) planAheadOf(ent *Entity) {
	if ent.Fields != nil && ent.Parent == "" {
		e.planAhead.Ask(1, true, 1)
	}
}
