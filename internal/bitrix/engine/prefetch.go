package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A rerun (every entity's last get pass complete) runs its entities one after another, and each
// begins with a few commands of its own sent one request at a time: an ID scan's bounds, the
// bounds of its delta's filtered scans, its ID-range counts, a list's first page, the custom
// fields' list. Together they were most of what a rerun with nothing changed cost. Migrate asks
// them up front instead (prefetch): every lister that can say which commands its next pass
// begins with (Prefetcher) says so, the commands go to the portal 50 to a batch request, and
// the answers are kept (prefetched) for the pass's own calls to take, each once. A prediction
// that does not match what the pass sends costs a command inside a batch, never a wrong answer:
// the pass's call builds its command with the same functions, and a command whose key is not
// kept goes to the portal.
//
// The answers are older than the pass that takes them, which is safe by construction: the
// portal's clock a pass records as its start is the answer's (earlier than the pass: the next
// delta reads from it, a little more than it needs), the skew between the portal's clock and
// this machine's is measured against when that answer arrived (Prefetched.arrivedAt), and the
// range counts and filtered scans' first pages are one snapshot taken together. A count lower
// than the rows stored after it only lists a range again; a record deleted after the snapshot
// is counted by the next pass (counts do not depend on modification time).

// Prefetcher is a Lister that can say which commands its next pass sends first, before the
// pass runs, from the same stored state the pass will read (its inventory, its stored ID
// ranges). Prefetch is asked once per round: round 1 for the commands the pass sends whatever the
// portal answers, round 2 for those that follow from round 1's answers (a pass's decision, taken
// by the portal's clock in its bounds' answer), round 3 for those that follow from round 2's (the
// children of the records a delta's filtered scans return first). A Lister that reads an entity with several ID
// scans (ScanLister) is asked through its scans. An error costs the prefetch of that lister only.
type Prefetcher interface {
	Lister
	Prefetch(ctx context.Context, env Env, ent *Entity, ahead *Ahead) ([]rest.Command, error)
}

// Ahead is what a prediction knows in its round: the round, and the answers of the rounds
// before it.
type Ahead struct {
	// Round is 1, 2 or 3 (Prefetcher).
	Round   int
	p       *prefetched
	anytime []rest.Command
	chains  [][]rest.Command
}

// Anytime hands the prefetch commands whose answers no later round reads: they are sent in this
// round or a later one, wherever a request has room, so that the prefetch sends as few requests
// as its rounds allow. The commands Prefetch returns are sent in its round.
func (a *Ahead) Anytime(cmds ...rest.Command) { a.anytime = append(a.anytime, cmds...) }

// Chain hands the prefetch a chain of commands that refer to each other's answers by their keys
// (rest.Scan.SegmentCommands, 50 at most): it is sent as it is, keys included, in a batch of its
// own (with room for commands handed to Anytime), and served only whole.
func (a *Ahead) Chain(cmds []rest.Command) {
	if len(cmds) > 0 && len(cmds) <= rest.MaxBatch {
		a.chains = append(a.chains, cmds)
	}
}

// Answer returns the answer a command of an earlier round received, without taking it from the
// pass it is kept for.
func (a *Ahead) Answer(cmd rest.Command) (*rest.Response, bool) {
	return a.p.peek(cmd.Method, cmd.Params)
}

// batch answers a batch from the answers of earlier rounds, without taking them, as the Source
// will answer the pass (rest.ScanBoundsWith over it reads the bounds begin will read); a command
// not asked ahead is left without an answer.
func (a *Ahead) batch(_ context.Context, cmds []rest.Command, _ bool) (*rest.BatchResult, error) {
	br := &rest.BatchResult{Results: map[string]json.RawMessage{}, Totals: map[string]int{}, Nexts: map[string]int{},
		Times: map[string]rest.Time{}}
	for _, c := range cmds {
		resp, ok := a.p.peek(c.Method, c.Params)
		if !ok {
			continue
		}
		br.Results[c.Key], br.Times[c.Key], br.Time = resp.Result, resp.Time, resp.Time
		if resp.Total != nil {
			br.Totals[c.Key] = *resp.Total
		}
		if resp.Next != nil {
			br.Nexts[c.Key] = *resp.Next
		}
	}
	return br, nil
}

// arrived returns when the answer with that time block reached this machine.
func (a *Ahead) arrived(t rest.Time) time.Time {
	if at, ok := a.p.arrivedAt(t); ok {
		return at
	}
	return time.Time{}
}

// prefetchRounds is how many rounds of predictions a prefetch asks (Prefetcher).
const prefetchRounds = 3

// prefetch asks the portal, up front, the commands the passes of ents (their families
// included) and their custom fields' reads will send first, and makes the engine's Source serve
// them from the answers until the returned func is called, which drops every answer left.
func (e *Engine) prefetch(ctx context.Context, ents []*Entity) (done func()) {
	p := &prefetched{Source: e.source, now: e.now, answers: map[string][]*rest.Response{}, arrived: map[rest.Time]time.Time{}}
	var requests, asked, kept int
	var anytime []rest.Command // commands no later round reads, sent where a request has room
	for round := 1; round <= prefetchRounds; round++ {
		ahead := &Ahead{Round: round, p: p}
		if round == 1 {
			ahead.Anytime(e.webhookCommands()...)
		}
		var cmds []rest.Command
		for _, ent := range ents {
			for _, f := range e.registry.Family(ent) {
				cmds = append(cmds, e.predict(ctx, f, ahead)...)
			}
		}
		anytime = append(anytime, ahead.anytime...)
		for _, chain := range ahead.chains {
			room := min(len(anytime), rest.MaxBatch-len(chain))
			k, err := p.send(ctx, chain, anytime[:room])
			anytime = anytime[room:]
			requests, asked, kept = requests+1, asked+len(chain)+room, kept+k
			if err != nil {
				break
			}
		}
		// The round's own commands, and as many of the others as fill its last request; the
		// last round sends every one left.
		room := len(anytime)
		if round < prefetchRounds {
			room = min(room, CeilDiv(int64(len(cmds)), rest.MaxBatch)*rest.MaxBatch-len(cmds))
		}
		cmds, anytime = append(cmds, anytime[:room]...), anytime[room:]
		r, k, err := p.ask(ctx, cmds)
		requests, asked, kept = requests+r, asked+len(cmds), kept+k
		if err != nil {
			break
		}
	}
	e.log.Info("migration: a rerun's first commands asked up front", "commands", asked, "answers_kept", kept,
		"requests", requests)
	e.source = p
	return func() {
		e.source = p.Source
		if n := p.left(); n > 0 {
			e.log.Info("migration: answers asked up front that no pass took, dropped", "answers", n)
		}
		p.mu.Lock()
		clear(p.answers)
		clear(p.arrived)
		p.mu.Unlock()
	}
}

// predict returns the commands of one round that ent's next pass (its lister's, or each of its
// scans') and its custom fields' read begin with. A prediction that fails is logged and
// skipped: the pass asks for itself.
func (e *Engine) predict(ctx context.Context, ent *Entity, ahead *Ahead) []rest.Command {
	var out []rest.Command
	add := func(cmds []rest.Command, err error) {
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("migration: no prediction of a pass's first commands", "entity", ent.Name, "error", err)
			}
			return
		}
		out = append(out, cmds...)
	}
	if ahead.Round == 1 && ent.Fields != nil && ent.Parent == "" {
		ahead.Anytime(rest.Command{Method: ent.Fields.Method, Params: fieldsParams(ent.Fields, 0)})
	}
	var listers []Prefetcher
	switch l := ent.Lister.(type) {
	case ScanLister:
		scans, err := l.Scans(ctx, e.env(), ent)
		add(nil, err)
		for _, s := range scans {
			listers = append(listers, s)
		}
	case Prefetcher:
		listers = append(listers, l)
	}
	for _, l := range listers {
		add(l.Prefetch(ctx, e.env(), ent, ahead))
	}
	return out
}

// answeredAt returns when the answer with that time block reached this machine: when a
// prefetch asked it, then; else now (an answer just received).
func (e *Engine) answeredAt(t rest.Time) time.Time {
	if p, ok := e.source.(*prefetched); ok {
		if at, ok := p.arrivedAt(t); ok {
			return at
		}
	}
	return e.now()
}

// Prefetch is Migrate's prefetch for callers that run the phases themselves (tests measuring a
// rerun's cost entity by entity): when every command entity o selects has a complete last get
// pass, it asks their passes' first commands up front and has the engine's Source serve them
// until done is called. Otherwise it asks nothing, and done does nothing.
func (e *Engine) Prefetch(ctx context.Context, o MigrateOptions) (done func(), err error) {
	ents, err := e.registry.MigrateEntities(o)
	if err != nil {
		return nil, err
	}
	rerun, err := e.isRerun(ctx, ents)
	if err != nil || !rerun {
		return func() {}, err
	}
	return e.prefetch(ctx, ents), nil
}
