package engine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// firmsModified are the modification fields the delta tests give Firms, as the CRM's.
var firmsModified = []string{"updatedTime", "lastActivityTime"}

// deltaRegistry is the synthetic registry with Firms read by modification time (by the fields
// given, or firmsModified), and select (nil: Firms' own) as its listing's select.
func deltaRegistry(t *testing.T, sel []string, modified ...string) *engine.Registry {
	t.Helper()
	if modified == nil {
		modified = firmsModified
	}
	ents := enginetest.Entities()
	for _, ent := range ents {
		if ent.Name != enginetest.Firms {
			continue
		}
		s := ent.Lister.(*engine.IDScan)
		s.Modified = modified
		if sel != nil {
			s.Scan.Params["select"] = sel
		}
	}
	reg, err := engine.NewRegistry(ents...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// deltaWorld is a world of 230 firms whose first get, a complete full pass, is done, followed by
// a get limited to limit records when limit > 0.
func deltaWorld(t *testing.T, limit int) *enginetest.World {
	t.Helper()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 20, Companies: 230, Seed: 35},
		Registry: deltaRegistry(t, nil)})
	w.Phases(w.Engine(), enginetest.People, "get")
	w.Phases(w.Engine(), enginetest.Firms, "get")
	if limit > 0 {
		w.Phases(w.Engine(func(c *engine.Config) { c.TestLimit = limit }), enginetest.Firms, "get")
	}
	return w
}

// firmIDs returns the portal's ids of the firms (companies).
func firmIDs(w *enginetest.World) []int { return w.Portal.PortalIDs(bitrixfake.DeleteCompanies) }

// The second get of an entity after a complete full pass is a delta pass that sends only its
// filtered scans' requests and stores what changed, unless something asks for a full pass;
// every pass says its kind and reason, and none concludes a deletion from what it did not read.
func TestSecondGetIsDeltaOrFull(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limit  int                                     // a get's test_limit after the full pass, when set
		change func(t *testing.T, w *enginetest.World) // on the portal between the gets
		cfg    func(t *testing.T, c *engine.Config)
		kind   engine.PassKind
		reason string
		// read, changed and inserted are the firms the second get reads and stores as
		// changed or new (checked for a delta pass).
		read, changed, inserted int
		// fullRows is what a full pass reads, when not every firm (a limited one).
		fullRows int
	}{
		{name: "nothing changed", kind: engine.PassDelta, reason: "reading what changed since"},
		{name: "an edit and an addition", kind: engine.PassDelta, reason: "reading what changed since",
			change: func(t *testing.T, w *enginetest.World) {
				if err := w.Portal.Edit(bitrixfake.DeleteCompanies, firmIDs(w)[100]); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Portal.Add(bitrixfake.DeleteCompanies); err != nil {
					t.Fatal(err)
				}
			}, read: 2, changed: 1, inserted: 1},
		{name: "a timeline comment: lastActivityTime", kind: engine.PassDelta, reason: "reading what changed since",
			change: func(t *testing.T, w *enginetest.World) {
				if _, err := w.Portal.AddTimelineComment(bitrixfake.DeleteCompanies, firmIDs(w)[7]); err != nil {
					t.Fatal(err)
				}
			}, read: 1},
		{name: "an edit and a comment of one record: read by both scans, stored once", kind: engine.PassDelta,
			reason: "reading what changed since",
			change: func(t *testing.T, w *enginetest.World) {
				id := firmIDs(w)[3]
				if _, err := w.Portal.AddTimelineComment(bitrixfake.DeleteCompanies, id); err != nil {
					t.Fatal(err)
				}
				if err := w.Portal.Edit(bitrixfake.DeleteCompanies, id); err != nil {
					t.Fatal(err)
				}
			}, read: 1, changed: 1},
		{name: "--full", cfg: func(_ *testing.T, c *engine.Config) { c.Full = true }, kind: engine.PassFull, reason: "asked with --full"},
		{name: "this pass limited", cfg: func(_ *testing.T, c *engine.Config) { c.TestLimit = 5 }, kind: engine.PassFull,
			reason: "this pass is limited to 5 records", fullRows: 5},
		{name: "after a limited pass", limit: 40, kind: engine.PassFull, reason: "the last pass was limited to 40 records"},
		{name: "the select changed", kind: engine.PassFull, reason: "what a pass reads changed",
			cfg: func(t *testing.T, c *engine.Config) { c.Registry = deltaRegistry(t, []string{"*", "id"}) }},
		{name: "a full pass is due", kind: engine.PassFull, reason: "a full pass is due every 1ns",
			cfg: func(_ *testing.T, c *engine.Config) { c.FullEvery = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := deltaWorld(t, tt.limit)
			firms := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, enginetest.Firms)
			if tt.change != nil {
				tt.change(t, w)
			}
			before := w.Portal.Stats()
			st, err := w.Engine(func(c *engine.Config) {
				if tt.cfg != nil {
					tt.cfg(t, c)
				}
			}).Get(w.Ctx, enginetest.Firms)
			if err != nil {
				t.Fatal(err)
			}
			after := w.Portal.Stats()
			inv := w.Inventory(enginetest.Firms)
			if inv.Kind != tt.kind || inv.Reason == nil || !strings.Contains(*inv.Reason, tt.reason) {
				t.Fatalf("pass = %s (%v), want %s (%q)", inv.Kind, deref(inv.Reason), tt.kind, tt.reason)
			}
			if !inv.Complete || !st.Complete {
				t.Errorf("pass complete = %v, stats complete = %v", inv.Complete, st.Complete)
			}
			if !strings.Contains(w.Log.String(), "kind="+string(tt.kind)) {
				t.Error("the log's `get started` does not say the pass's kind")
			}
			if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE status = 'DELETED_AT_SOURCE'`); n != 0 {
				t.Errorf("%d records concluded deleted", n)
			}
			if tt.kind == engine.PassFull {
				want := firms
				if tt.fullRows > 0 {
					want = tt.fullRows
				}
				if got := st.Of(enginetest.Firms).Rows; got != want {
					t.Errorf("a full pass read %d firms, want %d", got, want)
				}
				return
			}
			// A delta pass: the bounds of the whole listing (the portal's clock), one request per
			// modification field, each command filtered by it, and one request of ID-range counts
			// (one range: the counts agree, nothing is listed again).
			if got := after.Requests - before.Requests; got != 2+len(firmsModified) {
				t.Errorf("the delta pass sent %d requests, want %d", got, 2+len(firmsModified))
			}
			if got := after.Calls["crm.item.list"] - before.Calls["crm.item.list"]; got != 2*(1+len(firmsModified))+1 {
				t.Errorf("the delta pass ran %d crm.item.list commands, want the bounds' two per scan and one count", got)
			}
			c := st.Of(enginetest.Firms)
			if c.Rows != tt.read || c.Changed != tt.changed || c.Inserted != tt.inserted {
				t.Errorf("the delta pass read %d firms (%d changed, %d new), want %d (%d, %d)", c.Rows, c.Changed, c.Inserted,
					tt.read, tt.changed, tt.inserted)
			}
			if inv.DeltaSince == nil || inv.PortalStartedAt == nil || !inv.DeltaSince.Before(*inv.PortalStartedAt) {
				t.Errorf("delta since %v, portal start %v: want since before the start", inv.DeltaSince, inv.PortalStartedAt)
			}
			// The next get is a delta again, from this one's start.
			last := *inv.PortalStartedAt
			if _, err := w.Engine().Get(w.Ctx, enginetest.Firms); err != nil {
				t.Fatal(err)
			}
			if next := w.Inventory(enginetest.Firms); next.Kind != engine.PassDelta || !next.DeltaSince.Equal(last.Add(-engine.DefaultSkewMargin)) {
				t.Errorf("third pass %s since %v, want delta since %s less the margin", next.Kind, next.DeltaSince, last)
			}
		})
	}
}

// cancelOnBounds stops a get at its nth bounds request, as a crash would.
type cancelOnBounds struct {
	engine.Source
	n      int
	cancel context.CancelFunc
	calls  int
}

func (c *cancelOnBounds) ScanBounds(ctx context.Context, s rest.Scan, after string) (rest.Bounds, error) {
	if c.calls++; c.calls == c.n {
		c.cancel()
		return rest.Bounds{}, context.Cause(ctx)
	}
	return c.Source.ScanBounds(ctx, s, after)
}

// A delta pass killed anywhere resumes as a delta pass where each filtered scan stopped, reading
// nothing twice, and completes with every change stored.
func TestDeltaPassResumes(t *testing.T) {
	t.Parallel()
	const edits = 180 // more than the filtered scan's first page: it reads ranges after it
	tests := []struct {
		name string
		kill func(src engine.Source, cancel context.CancelFunc) engine.Source
	}{
		{"killed reading the first field's ranges", func(src engine.Source, cancel context.CancelFunc) engine.Source {
			return &enginetest.CancelOnCall{Source: src, N: 1, Cancel: cancel}
		}},
		{"killed starting the second field's scan", func(src engine.Source, cancel context.CancelFunc) engine.Source {
			return &cancelOnBounds{Source: src, n: 3, cancel: cancel}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := deltaWorld(t, 0)
			ids := firmIDs(w)
			for _, id := range ids[:edits] {
				if err := w.Portal.Edit(bitrixfake.DeleteCompanies, id); err != nil {
					t.Fatal(err)
				}
			}
			pass := w.Inventory(enginetest.Firms).Pass
			ctx, cancel := context.WithCancel(w.Ctx)
			defer cancel()
			first, err := w.Engine(func(c *engine.Config) { c.Source = tt.kill(w.Source, cancel) }).Get(ctx, enginetest.Firms)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted get = %v, want context.Canceled", err)
			}
			if inv := w.Inventory(enginetest.Firms); inv.Complete || inv.Kind != engine.PassDelta || inv.Pass != pass+1 {
				t.Fatalf("after the kill: pass %d %s complete=%v, want pass %d delta, not complete", inv.Pass, inv.Kind, inv.Complete, pass+1)
			}
			st, err := w.Engine().Get(w.Ctx, enginetest.Firms)
			if err != nil {
				t.Fatal(err)
			}
			inv := w.Inventory(enginetest.Firms)
			if !st.Resumed || inv.Pass != pass+1 || inv.Kind != engine.PassDelta || !inv.Complete {
				t.Fatalf("rerun: resumed=%v pass %d %s complete=%v, want pass %d resumed as delta and complete",
					st.Resumed, inv.Pass, inv.Kind, inv.Complete, pass+1)
			}
			if got := first.Of(enginetest.Firms).Changed + st.Of(enginetest.Firms).Changed; got != edits {
				t.Errorf("the two gets stored %d changed firms, want the %d edited", got, edits)
			}
			if got := st.Of(enginetest.Firms).Rows; got >= edits && first.Of(enginetest.Firms).Rows > 0 {
				t.Errorf("the rerun read %d firms again after the first stored %d", got, first.Of(enginetest.Firms).Rows)
			}
			if n := w.Count(`SELECT count(*) FROM (SELECT entity, cursor FROM bitrix_page_log WHERE pass = $1 AND entity LIKE 'firms>%'
GROUP BY entity, cursor HAVING count(*) > 1) d`, pass+1); n != 0 {
				t.Errorf("%d pages of the delta logged twice", n)
			}
			if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE status = 'DELETED_AT_SOURCE'`); n != 0 {
				t.Errorf("%d records concluded deleted", n)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// A delta pass whose filter the portal refuses (a field it does not filter by) turns into a full
// pass, which says why, reads every record and may conclude deletions; a kill after the turn
// resumes it as a full pass.
func TestDeltaPassTurnsFullWhenAFilterIsRefused(t *testing.T) {
	t.Parallel()
	w := deltaWorld(t, 0)
	firms := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, enginetest.Firms)
	ids := firmIDs(w)
	if err := w.Portal.Edit(bitrixfake.DeleteCompanies, ids[5]); err != nil {
		t.Fatal(err)
	}
	if err := w.Portal.Delete(bitrixfake.DeleteCompanies, ids[9]); err != nil {
		t.Fatal(err)
	}
	reg := deltaRegistry(t, nil, "updatedTime", "noSuchTime")
	ctx, cancel := context.WithCancel(w.Ctx)
	defer cancel()
	// Killed at the full walk's first request after the turn.
	_, err := w.Engine(func(c *engine.Config) {
		c.Registry, c.Source = reg, &enginetest.CancelOnCall{Source: w.Source, N: 1, Cancel: cancel}
	}).Get(ctx, enginetest.Firms)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	inv := w.Inventory(enginetest.Firms)
	if inv.Kind != engine.PassFull || inv.Complete || !strings.Contains(deref(inv.Reason), "the portal refused the filter >noSuchTime") {
		t.Fatalf("after the turn and the kill: %s complete=%v (%s), want an interrupted full pass saying why", inv.Kind, inv.Complete, deref(inv.Reason))
	}
	st, err := w.Engine(func(c *engine.Config) { c.Registry = reg }).Get(w.Ctx, enginetest.Firms)
	if err != nil {
		t.Fatal(err)
	}
	inv = w.Inventory(enginetest.Firms)
	if !st.Resumed || inv.Kind != engine.PassFull || !inv.Complete || inv.LastFullAt == nil || !inv.LastFullAt.Equal(*inv.StartedAt) {
		t.Errorf("rerun: resumed=%v %s complete=%v last full %v started %v, want the full pass resumed and recorded as the last full one",
			st.Resumed, inv.Kind, inv.Complete, inv.LastFullAt, inv.StartedAt)
	}
	if st.Deleted != 1 || w.Record(enginetest.Firms, strconv.Itoa(ids[9])).Status != engine.DeletedAtSource {
		t.Errorf("the full pass concluded %d deletions, want the deleted firm's", st.Deleted)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, enginetest.Firms); n != firms {
		t.Errorf("%d firms stored, want %d", n, firms)
	}
}
