package engine

import (
	"context"
	"fmt"
	"time"
)

// verifyEvery is how many records a step of verify goes through between two progress lines: a
// line per page of a large entity would be hundreds of lines, none per step a silent minute.
const verifyEvery = 1000

// stepProgress logs the progress of one step of verify that goes through an entity's records
// (listing the target, comparing, checking references): done of total, rate and ETA, every
// verifyEvery records and at the step's end.
type stepProgress struct {
	e                   *Engine
	step, entity        string
	total, done, logged int64
	start               time.Time
	// bound: total is an upper bound of the records the step reads (it skips some unread): at its
	// end every one of them is done.
	bound bool
}

func (e *Engine) stepProgress(step, entity string, total int64) *stepProgress {
	return &stepProgress{e: e, step: step, entity: entity, total: total, start: e.now()}
}

// add counts n more records done, and logs a line when verifyEvery more are done since the last.
func (p *stepProgress) add(n int) {
	p.done += int64(n)
	if p.done-p.logged >= verifyEvery {
		p.log()
	}
}

// end logs the step's last line, unless the last one said it all.
func (p *stepProgress) end() {
	if p.bound {
		p.done = max(p.done, p.total)
	}
	if p.done != p.logged {
		p.log()
	}
}

func (p *stepProgress) log() {
	p.logged = p.done
	total := max(p.total, p.done)
	p.e.progressStep("verify", p.step, p.entity, p.done, &total, int(p.done), p.start)
}

// refsProgress is the progress of checking one reference of every record of the entity: the
// records the check skips (an empty optional reference, one out of reach) count as done only
// at its end, so its ETA is an upper bound.
func (e *Engine) refsProgress(ctx context.Context, ent *Entity, ref Ref) (*stepProgress, error) {
	byStatus, _, err := e.store().countByStatus(ctx, ent.Name)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", ent.Name, err)
	}
	var total int64
	for _, n := range byStatus {
		total += n
	}
	p := e.stepProgress("references: "+ref.name(), ent.Name, total)
	p.bound = true
	return p, nil
}
