package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// GetStats sums up a get.
type GetStats struct {
	// Resumed is set when the get continued an interrupted pass instead of starting one.
	Resumed bool
	// Pass is the pass the get worked on; Cursor is where it started.
	Pass   int
	Cursor string
	// Pages counts the pages read from the entity's listing (and its walks').
	Pages int
	// Complete is set when the pass reached its end (or test_limit).
	Complete bool
	// Deleted counts the records (children included) the get moved to DELETED_AT_SOURCE: its
	// pass read the whole portal and no longer saw them.
	Deleted int
	// Unreachable counts records the webhook's user may not read (stored with the portal's
	// refusal, in IMPORT_ERR).
	Unreachable int
	// Counts holds what was read and stored per entity: the command's entity, its children, and
	// records pulled in beyond test_limit because the limited ones refer to them.
	Counts map[string]*GetCounts
}

// GetCounts counts the records of one entity a get read, by what storing them did.
type GetCounts struct {
	Rows, Inserted, Changed, Unchanged int
}

// Of returns the counts of one entity (zero when the get read none).
func (s *GetStats) Of(entity string) GetCounts {
	if c := s.Counts[entity]; c != nil {
		return *c
	}
	return GetCounts{}
}

// Add counts rows read of the entity and what storing them did; a lister that stores pages
// itself adds each page, so the get's counts are the same whichever lister read it.
func (s *GetStats) Add(entity string, rows int, sv Saved) {
	if s.Counts == nil {
		s.Counts = map[string]*GetCounts{}
	}
	c := s.Counts[entity]
	if c == nil {
		c = &GetCounts{}
		s.Counts[entity] = c
	}
	c.Rows += rows
	c.Inserted += sv.Inserted
	c.Changed += sv.Changed
	c.Unchanged += sv.Unchanged
}

// ErrNoTotal is a lister's answer when the portal cannot count the entity.
var ErrNoTotal = errors.New("the portal has no count of this entity")

// ErrLimitReached stops a listing once test_limit records are stored.
var ErrLimitReached = errors.New("test_limit reached")

// Get reads an entity and its children from the source into bitrix_records (seed 000
// "<entity>-get") with the entity's Lister: every page is stored in one transaction together
// with its PageLog row and the inventory's cursor, so an interrupted get resumes after the last
// stored page, and a get after a complete pass starts a new one, which finds the records changed
// since. A new or changed record is NEW; an unchanged one keeps its status.
//
// With TestLimit, only the first TestLimit records of the entity are read, with their children,
// and the records of other entities they refer to that are not stored yet.
func (e *Engine) Get(ctx context.Context, entity string) (GetStats, error) {
	ent, err := e.registry.Command(entity)
	if err != nil {
		return GetStats{}, err
	}
	return e.get(ctx, ent)
}

// get is Get of a registered entity.
func (e *Engine) get(ctx context.Context, ent *Entity) (GetStats, error) {
	defer e.metrics.Phase(ent.Name, "get")()
	st := GetStats{Counts: map[string]*GetCounts{}}
	// A pass this get resumes is being read again: `bitrix status` says so while this run lives.
	if err := e.store().touchPasses(ctx, e.registry.Family(ent)); err != nil {
		return st, err
	}
	err := ent.Lister.Get(ctx, &GetRun{Env: e.env(), Ent: ent, Stats: &st, Start: e.now()})
	if errors.Is(err, ErrLimitReached) {
		err = nil
	}
	if err == nil { // children with a listing of their own
		err = e.getListedChildren(ctx, ent, &st)
	}
	if err == nil { // children read per key once their parents are all stored
		err = e.walkChildren(ctx, ent, &st)
	}
	if err == nil { // what a complete pass no longer saw, the portal deleted
		var n int // (added to what its pages concluded: children read again, children_delta.go)
		n, err = e.concludeDeletions(ctx, ent)
		st.Deleted += n
	}
	if err != nil {
		return st, fmt.Errorf("get %s: %w", ent.Name, err)
	}
	attrs := []any{"entity", ent.Name, "pass", st.Pass, "resumed", st.Resumed, "pages", st.Pages, "complete", st.Complete}
	for _, name := range slices.Sorted(maps.Keys(st.Counts)) {
		c := st.Counts[name]
		attrs = append(attrs, name, fmt.Sprintf("%d read, %d new, %d changed, %d unchanged", c.Rows, c.Inserted, c.Changed, c.Unchanged))
	}
	if st.Unreachable > 0 {
		attrs = append(attrs, "unreachable", st.Unreachable)
	}
	if st.Deleted > 0 {
		attrs = append(attrs, "deleted_at_source", st.Deleted)
	}
	e.log.Info("get done", attrs...)
	return st, nil
}

// Lister reads a top-level entity (and the children it brings) from the portal. The engine's
// listers are IDScan (an ID-chained scan 50 pages to a batch), OffsetPages and PerRecord; an
// entity may bring its own. Each keeps its place in the page log and the inventory (through
// Env.Store) so an interrupted get resumes.
type Lister interface {
	// Get reads the entity for one Get call.
	Get(ctx context.Context, g *GetRun) error
	// Total asks the portal how many records the entity has, as cheaply as it can (verify's
	// source count).
	Total(ctx context.Context, env Env, ent *Entity) (int64, error)
	// Plan says how many records get will read for the entity and its children and how many
	// calls that takes, asking the portal as little as it can.
	Plan(ctx context.Context, env Env, ent *Entity) ([]EntityPlan, error)
}

// GetRun is one Get call: the entity, its counters and where it started.
type GetRun struct {
	Env   Env
	Ent   *Entity
	Stats *GetStats
	Start time.Time
	// Pass is the kind of the pass the lister runs and why, set by a lister that decides it
	// (one that can read by modification time); the zero value is a full pass.
	Pass PassDecision
}

// ResumeOrStart returns the entity's get pass: the interrupted one where it stopped (Stats.Resumed
// set), or a new one from the start. Every lister that keeps one cursor per pass begins here.
func (g *GetRun) ResumeOrStart(ctx context.Context) (Inventory, error) {
	store := g.Env.Store()
	inv, err := store.Inventory(ctx, g.Ent.Name)
	if err != nil {
		return inv, err
	}
	g.Stats.Resumed = inv.Pass > 0 && !inv.Complete
	if g.Stats.Resumed {
		return inv, nil
	}
	return store.StartPass(ctx, g.Ent.Name, g.Env.TestLimit())
}
