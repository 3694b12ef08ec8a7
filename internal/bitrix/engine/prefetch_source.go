package engine

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// prefetched is the portal as a rerun's entities see it (prefetch.go): the commands their passes
// begin with were asked up front, many to a batch request, and each answer is kept here, keyed by
// method and canonical parameters, until the one call that sends the same command takes it. An
// answer is taken once; a command nobody predicted, or predicted differently, goes to the portal
// as before. The answers live in memory for one Migrate only: a killed run loses them, and the
// next run asks again.
type prefetched struct {
	Source
	now func() time.Time

	mu      sync.Mutex
	answers map[string][]*rest.Response
	// arrived holds, by an answer's time block, when that answer reached this machine: what
	// the portal's clock in it is compared with (the skew check of decidePass).
	arrived map[rest.Time]time.Time
}

// commandKey is the cache's key of a command: its method and its parameters as canonical JSON
// (encoding/json sorts map keys). The call that sends the command and the prediction that asked
// it ahead build the parameters with the same functions, so equal commands have equal keys.
func commandKey(method string, params any) (string, bool) {
	b, err := json.Marshal(params)
	if err != nil {
		return "", false
	}
	return method + "\x00" + string(b), true
}

// keep stores the answers of a prefetch batch: those with a result, each under its command's
// key. A command answered with an error (or not at all) is not kept: its pass asks again and
// judges the error as it always did.
func (p *prefetched) keep(cmds []rest.Command, br *rest.BatchResult, at time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := 0
	for _, c := range cmds {
		resp, err := br.Response(c.Key)
		if err != nil {
			continue
		}
		key, ok := commandKey(c.Method, c.Params)
		if !ok {
			continue
		}
		// Served with the batch's own time block, which every generation of the portal fills
		// (its clock and offset): the call it stands for would have had one of its own.
		served := *resp
		served.Time = br.Time
		p.answers[key] = append(p.answers[key], &served)
		kept++
	}
	p.arrived[br.Time] = at
	return kept
}

// peek returns the kept answer of a command without taking it (a later prediction reads an
// earlier one's answer: the portal's clock, a pass's decision).
func (p *prefetched) peek(method string, params any) (*rest.Response, bool) {
	key, ok := commandKey(method, params)
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if list := p.answers[key]; len(list) > 0 {
		return list[0], true
	}
	return nil, false
}

// take removes and returns the kept answer of a command, if there is one.
func (p *prefetched) take(method string, params any) (*rest.Response, bool) {
	key, ok := commandKey(method, params)
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.answers[key]
	if len(list) == 0 {
		return nil, false
	}
	if len(list) == 1 {
		delete(p.answers, key)
	} else {
		p.answers[key] = list[1:]
	}
	return list[0], true
}

// arrivedAt returns when the answer with that time block reached this machine, if it was
// asked ahead.
func (p *prefetched) arrivedAt(t rest.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.arrived[t]
	return at, ok
}

// left counts the answers nobody took.
func (p *prefetched) left() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, list := range p.answers {
		n += len(list)
	}
	return n
}

// Call answers from a kept answer, or asks the portal.
func (p *prefetched) Call(ctx context.Context, method string, params any) (*rest.Response, error) {
	if resp, ok := p.take(method, params); ok {
		return resp, nil
	}
	return p.Source.Call(ctx, method, params)
}

// Batch answers the commands it kept answers of and sends the others, in one batch. A batch
// sent with halt is a chain whose commands refer to each other's answers: it goes to the portal
// whole.
func (p *prefetched) Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error) {
	if halt {
		return p.Source.Batch(ctx, cmds, halt)
	}
	if chained(cmds) && !p.holdsAll(cmds) {
		// A command that refers to another's answer runs only beside it: all from the answers
		// kept (a chain asked ahead as it is sent), or all from the portal.
		return p.Source.Batch(ctx, cmds, halt)
	}
	kept := map[string]*rest.Response{}
	var ask []rest.Command
	for _, c := range cmds {
		if resp, ok := p.take(c.Method, c.Params); ok {
			kept[c.Key] = resp
		} else {
			ask = append(ask, c)
		}
	}
	if len(kept) == 0 {
		return p.Source.Batch(ctx, cmds, halt)
	}
	var br *rest.BatchResult
	if len(ask) > 0 {
		var err error
		if br, err = p.Source.Batch(ctx, ask, halt); err != nil {
			p.giveBack(cmds, kept)
			return nil, err
		}
	} else {
		br = &rest.BatchResult{}
		for _, c := range cmds { // the time of the answers, as if the batch had been sent then
			br.Time = kept[c.Key].Time
			break
		}
	}
	if br.Results == nil {
		br.Results = map[string]json.RawMessage{}
	}
	for _, m := range []*map[string]int{&br.Totals, &br.Nexts} {
		if *m == nil {
			*m = map[string]int{}
		}
	}
	if br.Times == nil {
		br.Times = map[string]rest.Time{}
	}
	for key, resp := range kept {
		br.Results[key] = resp.Result
		br.Times[key] = resp.Time
		if resp.Total != nil {
			br.Totals[key] = *resp.Total
		}
		if resp.Next != nil {
			br.Nexts[key] = *resp.Next
		}
	}
	return br, nil
}

// chained reports whether a command of cmds refers to another's answer (rest.Ref).
func chained(cmds []rest.Command) bool {
	for _, c := range cmds {
		if key, ok := commandKey(c.Method, c.Params); !ok || strings.Contains(key, "$result[") {
			return true
		}
	}
	return false
}

// holdsAll reports whether an answer of every command of cmds is kept (as many as each repeats).
func (p *prefetched) holdsAll(cmds []rest.Command) bool {
	need := map[string]int{}
	for _, c := range cmds {
		key, ok := commandKey(c.Method, c.Params)
		if !ok {
			return false
		}
		need[key]++
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, n := range need {
		if len(p.answers[key]) < n {
			return false
		}
	}
	return true
}

// giveBack returns taken answers to the cache when the batch they were to join failed: the
// call that retries it takes them again.
func (p *prefetched) giveBack(cmds []rest.Command, kept map[string]*rest.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cmds {
		if resp, ok := kept[c.Key]; ok {
			if key, ok := commandKey(c.Method, c.Params); ok {
				p.answers[key] = append([]*rest.Response{resp}, p.answers[key]...)
			}
		}
	}
}

// ScanBounds reads the bounds through Batch, so that kept answers serve them.
func (p *prefetched) ScanBounds(ctx context.Context, s rest.Scan, after string) (rest.Bounds, error) {
	return rest.ScanBoundsWith(ctx, p.Batch, s, after)
}

// ScanSegments reads the segments through Batch, so that a chain asked ahead serves them.
func (p *prefetched) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	return rest.ScanSegmentsWith(ctx, p.Batch, s, segs)
}

// ListByStart pages through Call and Batch, so that a kept first page serves it.
func (p *prefetched) ListByStart(ctx context.Context, l rest.List, start int, fn func(rest.Page) error) error {
	return rest.ListByStartWith(ctx, p.Call, p.Batch, l, start, fn)
}

// Stats is the portal's request counts, when it keeps them (the plan's and the log's figures).
func (p *prefetched) Stats() rest.Stats {
	if s, ok := p.Source.(interface{ Stats() rest.Stats }); ok {
		return s.Stats()
	}
	return rest.Stats{}
}

// ask sends cmds in batches of rest.MaxBatch (without halt, each command on its own) and keeps
// their answers; it returns how many requests it sent and how many answers it kept. A batch that
// fails is left out: its commands are asked again by the passes that need them.
func (p *prefetched) ask(ctx context.Context, cmds []rest.Command) (requests, kept int, err error) {
	for len(cmds) > 0 {
		chunk := cmds[:min(len(cmds), rest.MaxBatch)]
		cmds = cmds[len(chunk):]
		k, err := p.send(ctx, nil, chunk)
		requests, kept = requests+1, kept+k
		if err != nil {
			return requests, kept, err
		}
	}
	return requests, kept, nil
}

// send asks one batch: a chain's commands as they are (their keys are what they refer to each
// other by), and others keyed "p" and their place, which no chain's key is (rest.Scan's chains
// are keyed "s"). A batch that fails is left out, as ask says.
func (p *prefetched) send(ctx context.Context, chain, others []rest.Command) (kept int, err error) {
	keyed := append([]rest.Command{}, chain...)
	for i, c := range others {
		keyed = append(keyed, rest.Command{Key: "p" + strconv.Itoa(i), Method: c.Method, Params: c.Params})
	}
	br, err := p.Source.Batch(ctx, keyed, false)
	if err != nil {
		return 0, ctx.Err()
	}
	return p.keep(keyed, br, p.now()), nil
}
