package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ingest-dev/ingest/internal/status"
)

// SetStats sums up a set, per entity (a parent and its children are counted apart).
type SetStats map[string]*SetCounts

// SetCounts counts what one set did to one entity's records.
type SetCounts struct {
	// Imported moved to IMPORT_OK; Retry to ERROR_RETRY; Failed to IMPORT_ERR.
	Imported, Retry, Failed int
	// Retries counts the attempts made on ERROR_RETRY records.
	Retries int
	// Waiting counts child records left waiting because their parent is not imported.
	Waiting int64
	// Unfinished counts the attempts of earlier sets that never finished (their process died),
	// each recorded as a failed attempt as this set started.
	Unfinished int
}

func (s SetStats) of(entity string) *SetCounts {
	if s[entity] == nil {
		s[entity] = &SetCounts{}
	}
	return s[entity]
}

// PrerequisiteError is returned when a phase may not start yet (seed 001 "Prerequisites").
type PrerequisiteError struct {
	Phase, Entity string // what was refused: "set" of an entity
	Needs         string // the entity that must be ready first
	Reason        string
}

func (e *PrerequisiteError) Error() string {
	return fmt.Sprintf("%s %s refused: %s must be imported and verified first: %s", e.Entity, e.Phase, e.Needs, e.Reason)
}

// ErrPrerequisite is wrapped by every PrerequisiteError.
var ErrPrerequisite = errors.New("prerequisite not met")

func (e *PrerequisiteError) Unwrap() error { return ErrPrerequisite }

// Set imports the entity's NEW records and its due ERROR_RETRY ones through the target (seed 000
// "<entity>-set"), then its children's, a child only once its parent is IMPORT_OK, in batches of
// the entity's size. Each record ends the run in IMPORT_OK (its target id in bitrix_id_map),
// IMPORT_ERR (a permanent failure, an unresolvable reference, an unreadable date, or retries
// used up), or, if the run is stopped, where it was. Retryable failures are retried in the same
// run on the machine's schedule: Set waits until the last ERROR_RETRY record is settled.
// Batches go out up to SetConcurrency at a time, except for entities whose records must arrive
// in order (Entity.Order), which go one batch after another.
//
// It refuses to start until every entity the entity requires is verified.
func (e *Engine) Set(ctx context.Context, entity string) (SetStats, error) {
	ent, err := e.registry.Command(entity)
	if err != nil {
		return nil, err
	}
	return e.set(ctx, ent)
}

// set is Set of a registered entity.
func (e *Engine) set(ctx context.Context, ent *Entity) (SetStats, error) {
	for _, need := range ent.Requires {
		if err := e.requireVerified(ctx, ent.Name, "set", need); err != nil {
			return nil, err
		}
	}
	defer e.metrics.Phase(ent.Name, "set")()
	family := e.registry.Family(ent)
	if err := e.propagateDeletions(ctx, family); err != nil {
		return nil, err
	}
	s := &setter{e: e, st: SetStats{}, start: e.now()}
	for _, m := range family {
		if err := s.countUnfinished(ctx, m); err != nil {
			return s.st, err
		}
		if m.SelfRef != "" {
			if err := s.reviveOrphans(ctx, m); err != nil {
				return s.st, err
			}
		}
	}
	if err := s.countBacklog(ctx, family); err != nil {
		return s.st, err
	}
	e.log.Info("set started", "entity", ent.Name, "backlog", s.backlog)
	for {
		worked := false
		for _, m := range family {
			did, err := s.round(ctx, m)
			if err != nil {
				return s.st, err
			}
			worked = worked || did
		}
		if worked {
			continue
		}
		next, ok, err := e.nextDue(ctx, family)
		if err != nil || !ok {
			if err != nil {
				return s.st, err
			}
			break
		}
		wait := next.Sub(e.now())
		e.log.Debug("waiting for the next retry", "entity", ent.Name, "wait", wait)
		if err := e.sleep(ctx, wait); err != nil {
			return s.st, err
		}
	}
	for _, m := range family {
		if m.SelfRef != "" {
			if _, err := s.failOrphans(ctx, m); err != nil {
				return s.st, err
			}
		}
	}
	for _, m := range family {
		c := s.st.of(m.Name)
		attrs := []any{"entity", m.Name, "imported", c.Imported, "failed", c.Failed, "retry_pending", c.Retry, "retries", c.Retries,
			"unfinished", c.Unfinished}
		if m.Parent != "" {
			var err error
			if c.Waiting, err = e.waitingChildren(ctx, m); err != nil {
				return s.st, err
			}
			attrs = append(attrs, "waiting_for_parent", c.Waiting)
			if c.Waiting > 0 {
				e.log.Warn("records wait for their parent, which is not imported", "entity", m.Name, "parent", m.Parent, "count", c.Waiting)
			}
		}
		e.log.Info("set done", attrs...)
	}
	return s.st, nil
}

// nextDue returns when the next ERROR_RETRY record of the entities comes due.
func (e *Engine) nextDue(ctx context.Context, ents []*Entity) (time.Time, bool, error) {
	var next time.Time
	found := false
	for _, m := range ents {
		at, ok, err := Machine.NextDue(ctx, e.pool, m.Name)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	return next, found, nil
}

// waitingChildren counts a child entity's records not imported because their parent is not.
func (e *Engine) waitingChildren(ctx context.Context, child *Entity) (int64, error) {
	return Machine.CountWaiting(ctx, e.pool, child.Name, pending, parentImported(child))
}

// parentImported is the condition on a child's parent that lets the child be imported.
func parentImported(child *Entity) status.ParentPick {
	return status.ParentPick{Column: "parent_source_id", Machine: Machine, ScopeValue: child.Parent,
		Statuses: []status.Status{ImportOK}}
}

// pending are the statuses set works on.
var pending = []status.Status{StatusNew, ErrorRetry}

func statusNames(ss []status.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// requireVerified refuses a phase of entity until needs is verified.
func (e *Engine) requireVerified(ctx context.Context, entity, phase, needs string) error {
	inv, err := e.store().loadInventory(ctx, needs)
	if err != nil {
		return err
	}
	if inv.Verified {
		return nil
	}
	var notOK int64
	if ent, ok := e.registry.Entity(needs); ok {
		if notOK, err = e.store().countNotOK(ctx, ent); err != nil {
			return err
		}
	}
	var reason string
	switch {
	case inv.Pass == 0:
		reason = fmt.Sprintf("%s were never read; run `ingest bitrix %s run`", needs, needs)
	case notOK > 0:
		reason = fmt.Sprintf("%d %s records are not IMPORT_OK; run `ingest bitrix %s set` then `ingest bitrix %s verify`",
			notOK, needs, needs, needs)
	case inv.LastVerify != nil && !inv.LastVerify.Clean():
		reason = fmt.Sprintf("the last %s verify found problems (%s); fix them and run `ingest bitrix %s verify`",
			needs, inv.LastVerify.Summary(), needs)
	default:
		reason = fmt.Sprintf("%s changed or were never verified since their import; run `ingest bitrix %s verify`", needs, needs)
	}
	return &PrerequisiteError{Phase: phase, Entity: entity, Needs: needs, Reason: reason}
}

// setter carries one Set call's counters.
type setter struct {
	e       *Engine
	start   time.Time
	backlog int64

	mu   sync.Mutex // guards st and done: batches are recorded concurrently
	st   SetStats
	done int64
}

func (s *setter) countBacklog(ctx context.Context, family []*Entity) error {
	names := make([]string, len(family))
	for i, m := range family {
		names[i] = m.Name
	}
	var err error
	s.backlog, err = s.e.store().countBacklog(ctx, names)
	return err
}

// round sends every record of ent that is due now: NEW ones and ERROR_RETRY ones whose next
// attempt has come, children only once their parent is IMPORT_OK. It reports whether it sent
// anything.
func (s *setter) round(ctx context.Context, ent *Entity) (bool, error) {
	if ent.Order.ordered() {
		return s.orderedRound(ctx, ent)
	}
	p := status.PickParams{Statuses: pending, Limit: ent.Batch, ScopeValue: ent.Name, DueBy: s.e.now()}
	if ent.Parent != "" {
		pp := parentImported(ent)
		p.Parent = &pp
	}
	if ent.SelfRef != "" { // parents first: a record goes once the record it names is imported
		pp := selfParent(ent)
		var err error
		if pp.Gone, err = selfGone(ctx, s.e.pool, ent); err != nil {
			return false, err
		}
		p.Parent = &pp
	}
	worked, drained := false, false
	pick := func(ctx context.Context) ([]int64, bool, error) {
		if drained { // batches in flight leave nothing new after p.After: no need to ask again
			return nil, false, nil
		}
		ids, err := Machine.Pick(ctx, s.e.pool, p)
		if err != nil || len(ids) == 0 {
			drained = true
			return nil, false, err
		}
		worked, p.After = true, ids[len(ids)-1]
		return ids, true, nil
	}
	err := runPool(ctx, s.e.concurrency, pick, func(ctx context.Context, ids []int64) error {
		return s.importIDs(ctx, ent, ids)
	}, nil)
	return worked, err
}

// orderedRound sends an ordered child entity's NEW records parent by parent, in Entity.Order
// within each parent, one batch after another (a batch may carry the end of one parent's
// records and the start of the next one's); then its due retries.
func (s *setter) orderedRound(ctx context.Context, ent *Entity) (bool, error) {
	parents, err := Machine.Parents(ctx, s.e.pool, ent.Name, []status.Status{StatusNew}, parentImported(ent))
	if err != nil {
		return false, err
	}
	var queue []int64
	flush := func(all bool) error {
		for len(queue) >= ent.Batch || (all && len(queue) > 0) {
			n := min(len(queue), ent.Batch)
			if err := s.importIDs(ctx, ent, queue[:n]); err != nil {
				return err
			}
			queue = queue[n:]
		}
		return nil
	}
	for _, parent := range parents {
		ids, err := Machine.PickChildren(ctx, s.e.pool, status.ChildPick{ScopeValue: ent.Name, Column: "parent_source_id",
			Key: parent, Statuses: []status.Status{StatusNew}, Order: ent.Order.sql()})
		if err != nil {
			return false, fmt.Errorf("%s of %s %s: %w", ent.Name, ent.Parent, parent, err)
		}
		queue = append(queue, ids...)
		if err := flush(false); err != nil {
			return false, err
		}
	}
	if err := flush(true); err != nil {
		return false, err
	}
	worked := len(parents) > 0
	pp := parentImported(ent)
	p := status.PickParams{Statuses: []status.Status{ErrorRetry}, Limit: ent.Batch, ScopeValue: ent.Name, DueBy: s.e.now(), Parent: &pp}
	for {
		ids, err := Machine.Pick(ctx, s.e.pool, p)
		if err != nil || len(ids) == 0 {
			return worked, err
		}
		if err := s.importIDs(ctx, ent, ids); err != nil {
			return worked, err
		}
		worked, p.After = true, ids[len(ids)-1]
	}
}

// importIDs loads the records with the given ids and imports them, in that order.
func (s *setter) importIDs(ctx context.Context, ent *Entity, ids []int64) error {
	loaded, err := s.e.store().loadRecords(ctx, ids)
	if err != nil {
		return err
	}
	byID := make(map[int64]Record, len(loaded))
	for _, r := range loaded {
		byID[r.ID] = r
	}
	recs := make([]Record, 0, len(loaded))
	for _, id := range ids {
		// A record another run or a person moved since the pick is no longer this run's: its
		// move would start from a status set never leaves (IMPORT_OK -> IMPORT_OK). The move
		// itself checks the status again under the row lock (recordSuccesses, Fail).
		if r, ok := byID[id]; ok && slices.Contains(pending, r.Status) {
			recs = append(recs, r)
		}
	}
	return s.attempt(ctx, recs, func(recs []Record) error { return s.importRecords(ctx, ent, recs) })
}
