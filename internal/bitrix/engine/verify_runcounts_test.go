package engine_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// portalAsks counts the methods the portal runs while it is on.
type portalAsks struct {
	mu      sync.Mutex
	on      bool
	methods map[string]int
}

func (a *portalAsks) observe(method string, _ map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.on {
		a.methods[method]++
	}
}

// during runs fn and returns the methods the portal ran meanwhile, sorted.
func (a *portalAsks) during(fn func()) []string {
	a.mu.Lock()
	a.on, a.methods = true, map[string]int{}
	a.mu.Unlock()
	fn()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.on = false
	return slices.Sorted(maps.Keys(a.methods))
}

// runCountsPortal is the portal of the tests of verify's counts: more posts and firms than a page
// holds, so that their gets can be stopped halfway.
func runCountsPortal(asks *portalAsks) bitrixfake.Options {
	return bitrixfake.Options{Users: 20, Groups: 4, Posts: 120, Companies: 230, Workflows: 3, Seed: 41, Observe: asks.observe}
}

// Verify in the run whose get read an entity's listing whole takes the count that get read: it
// asks the portal for no count, for every kind of lister, on a first migration and on a rerun
// (Firms' second pass is a delta pass). Verify in a run whose get did not read the listing (no
// get, or a pass that another run began) asks the portal, as before.
func TestVerifyTakesTheCountsOfTheSameRunsGet(t *testing.T) {
	t.Parallel()
	asks := &portalAsks{}
	w := enginetest.New(t, enginetest.Options{Portal: runCountsPortal(asks), Registry: deltaRegistry(t, nil)})
	tests := []struct {
		lister string
		entity string
		// counts are the methods verify asks for the entity's counts when no get of its run read
		// them (none: the lister's count is what get stored, asked of no portal).
		counts []string
	}{
		{lister: "ID scan", entity: enginetest.People, counts: []string{"user.get"}},
		{lister: "ID scan with a child fetched per page", entity: enginetest.Teams, counts: []string{"sonet_group.get"}},
		{lister: "ID scan, delta on the rerun", entity: enginetest.Firms, counts: []string{"crm.item.list"}},
		{lister: "offset pages with a child walked per key", entity: enginetest.Posts, counts: []string{"log.blogpost.get"}},
		{lister: "offset pages with a listed child", entity: enginetest.Flows,
			counts: []string{"bizproc.workflow.instances", "bizproc.workflow.template.list"}},
		{lister: "per record", entity: enginetest.FirmNotes},
	}
	for _, run := range []string{"first migration", "rerun"} {
		for _, tt := range tests {
			e := w.Engine()
			w.Phases(e, tt.entity, "get", "set")
			if got := asks.during(func() { w.Phases(e, tt.entity, "verify") }); len(got) > 0 {
				t.Errorf("%s, %s (%s): verify in the get's run asked the portal %v", run, tt.entity, tt.lister, got)
			}
			if got := asks.during(func() { w.Phases(w.Engine(), tt.entity, "verify") }); !slices.Equal(got, tt.counts) {
				t.Errorf("%s, %s (%s): verify in a run of its own asked %v, want %v", run, tt.entity, tt.lister, got, tt.counts)
			}
		}
	}
}

// A pass that does not read the whole listing in the run of the verify records no count: one
// resumed from an interrupted run, and one cut by test_limit. Verify then asks the portal.
func TestVerifyAsksWhenTheRunsPassIsNotWhole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		entity string
		count  string
		// first runs before the engine whose get and verify are looked at; nil for none.
		first func(w *enginetest.World, ctx context.Context, cancel context.CancelFunc)
		cfg   func(c *engine.Config)
	}{
		{name: "ID scan resumed", entity: enginetest.Firms, count: "crm.item.list",
			first: func(w *enginetest.World, ctx context.Context, cancel context.CancelFunc) {
				e := w.Engine(func(c *engine.Config) {
					c.Concurrency = 1
					c.Source = &enginetest.CancelOnCall{Source: w.Source, N: 1, Cancel: cancel}
				})
				if _, err := e.Get(ctx, enginetest.Firms); !errors.Is(err, context.Canceled) {
					w.T.Fatalf("interrupted get = %v, want context.Canceled", err)
				}
			}},
		{name: "offset pages resumed", entity: enginetest.Posts, count: "log.blogpost.get",
			first: func(w *enginetest.World, ctx context.Context, cancel context.CancelFunc) {
				e := w.Engine(func(c *engine.Config) { c.Source = &enginetest.StopListing{Source: w.Source, Pages: 1, Cancel: cancel} })
				if _, err := e.Get(ctx, enginetest.Posts); !errors.Is(err, context.Canceled) {
					w.T.Fatalf("interrupted get = %v, want context.Canceled", err)
				}
			}},
		{name: "ID scan limited", entity: enginetest.People, count: "user.get",
			cfg: func(c *engine.Config) { c.TestLimit = 5 }},
		{name: "offset pages limited", entity: enginetest.Flows, count: "bizproc.workflow.template.list",
			cfg: func(c *engine.Config) { c.TestLimit = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			asks := &portalAsks{}
			w := enginetest.New(t, enginetest.Options{Portal: runCountsPortal(asks)})
			w.Phases(w.Engine(), enginetest.People, "get")
			if tt.first != nil {
				ctx, cancel := context.WithCancel(w.Ctx)
				tt.first(w, ctx, cancel)
				cancel()
			}
			var opts []func(*engine.Config)
			if tt.cfg != nil {
				opts = append(opts, tt.cfg)
			}
			e := w.Engine(opts...)
			st, err := e.Get(w.Ctx, tt.entity)
			if err != nil {
				t.Fatal(err)
			}
			if tt.first != nil && !st.Resumed {
				t.Fatalf("the get did not resume the interrupted pass: %+v", st)
			}
			got := asks.during(func() {
				if _, err := e.Verify(w.Ctx, tt.entity); err != nil { // its problems are not the test's
					t.Fatal(err)
				}
			})
			if !slices.Contains(got, tt.count) {
				t.Errorf("verify after a pass not whole in its run asked %v, want %s among them", got, tt.count)
			}
		})
	}
}
