package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/status"
)

const deltaDeals = "deals"

// deltaDealsEntity describes deals as crm.item.list lists them, without references, so that a
// test reads nothing else.
func deltaDealsEntity() *engine.Entity {
	return &engine.Entity{
		Name: deltaDeals,
		Lister: &engine.IDScan{Scan: rest.Scan{Method: "crm.item.list",
			Params:  map[string]any{"entityTypeId": 2, "select": []string{"*"}, "useOriginalUfNames": "Y"},
			IDField: "id", RowsPath: []string{"items"}, Order: map[string]any{"order": map[string]any{"id": "ASC"}}, IDListOp: "@"},
			CountParams: map[string]any{"select": []string{"id"}}},
		IDField:  "id",
		Dates:    []string{"createdTime", "updatedTime", "movedTime", "lastActivityTime", "begindate", "closedate"},
		Volatile: []string{"lastActivityTime", "lastActivityBy", "lastCommunicationTime"},
		Batch:    50,
		NoFields: "the test's deals read no custom fields",
	}
}

// choreCommentsEntity is a child of the chores fetched with every page of them (the old card's
// task.commentitem.getlist), so that a deleted chore has children to take with it.
func choreCommentsEntity() *engine.Entity {
	return &engine.Entity{
		Name:   "chore_comments",
		Noun:   "comments",
		Parent: enginetest.Chores,
		Fetch: &engine.ChildFetch{Method: "task.commentitem.getlist", KeyField: "ID",
			Params: func(task string) any { return []any{task, map[string]string{"ID": "asc"}} }},
		Batch:    50,
		NoFields: "comments have no custom fields",
	}
}

// deltaSource records the requests a get sends, by kind: counts (a batch of filtered first
// pages of ID ranges, start 0), re-listings (ID ranges' pages, rest.ScanSegments) and any other.
// It cancels the get when the re-listing request numbered cancelAt begins, as a kill would.
type deltaSource struct {
	engine.Source
	mu       sync.Mutex
	counts   int            // count requests
	counted  int            // ranges counted
	relists  int            // re-listing requests
	segments []rest.Segment // the ranges re-listed, as first asked
	other    []string
	cancelAt int
	cancel   context.CancelFunc
}

func (d *deltaSource) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts, d.counted, d.relists, d.segments, d.other = 0, 0, 0, nil, nil
}

func (d *deltaSource) Call(ctx context.Context, method string, params any) (*rest.Response, error) {
	d.mu.Lock()
	d.other = append(d.other, "call "+method)
	d.mu.Unlock()
	return d.Source.Call(ctx, method, params)
}

func (d *deltaSource) Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error) {
	d.mu.Lock()
	if slices.IndexFunc(cmds, func(c rest.Command) bool { return !isRangeCount(c) }) < 0 {
		d.counts++
		d.counted += len(cmds)
	} else {
		d.other = append(d.other, fmt.Sprintf("batch of %d, first %s %v", len(cmds), cmds[0].Method, cmds[0].Params))
	}
	d.mu.Unlock()
	return d.Source.Batch(ctx, cmds, halt)
}

func (d *deltaSource) ScanBounds(ctx context.Context, s rest.Scan, after string) (rest.Bounds, error) {
	d.mu.Lock()
	d.other = append(d.other, "bounds "+s.Method)
	d.mu.Unlock()
	return d.Source.ScanBounds(ctx, s, after)
}

func (d *deltaSource) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	d.mu.Lock()
	d.relists++
	for _, sg := range segs {
		if !slices.ContainsFunc(d.segments, func(x rest.Segment) bool { return x.UpTo == sg.UpTo }) {
			d.segments = append(d.segments, sg)
		}
	}
	stop := d.relists == d.cancelAt
	d.mu.Unlock()
	if stop {
		d.cancel()
		return nil, context.Cause(ctx)
	}
	return d.Source.ScanSegments(ctx, s, segs)
}

// isRangeCount tells a count of an ID range: a first page with counting on, filtered to the range.
func isRangeCount(c rest.Command) bool {
	p, ok := c.Params.(map[string]any)
	if !ok || fmt.Sprint(p["start"]) != "0" {
		return false
	}
	f, _ := p["filter"].(map[string]any)
	_, after := f[">id"]
	_, upTo := f["<=id"]
	if !after {
		_, after = f[">ID"]
		_, upTo = f["<=ID"]
	}
	return after && upTo
}

// deltaWorld is a world of one ID-scanned entity (and its children) with its engine's source
// recorded, after a complete full get of it.
func rangesWorld(t *testing.T, portal bitrixfake.Options, entities ...*engine.Entity) (*enginetest.World, *deltaSource, func(...func(*engine.Config)) *engine.Engine) {
	t.Helper()
	reg, err := engine.NewRegistry(entities...)
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.New(t, enginetest.Options{Portal: portal, Registry: reg})
	src := &deltaSource{Source: w.Source}
	zone := time.FixedZone("+0300", 3*3600)
	newEngine := func(opts ...func(*engine.Config)) *engine.Engine {
		return w.Engine(append([]func(*engine.Config){func(c *engine.Config) {
			c.Source, c.SourceZone = src, zone
		}}, opts...)...)
	}
	if _, err := newEngine().Get(w.Ctx, entities[0].Name); err != nil {
		t.Fatal(err)
	}
	return w, src, newEngine
}

// deletedIDs returns the portal ids of the entity's records in DELETED_AT_SOURCE, in ID order.
func deletedIDs(w *enginetest.World, entity string) []string {
	w.T.Helper()
	rows, err := w.Pool.Query(w.Ctx, `SELECT source_id FROM bitrix_records WHERE entity = $1 AND status = $2 ORDER BY id`,
		entity, string(engine.DeletedAtSource))
	if err != nil {
		w.T.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			w.T.Fatal(err)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, rest.CompareIDs)
	return out
}

// holds reports whether one of the segments' ranges holds the id.
func holds(segs []rest.Segment, id int) bool {
	return slices.ContainsFunc(segs, func(s rest.Segment) bool {
		lo, _ := strconv.Atoi(s.After)
		hi, _ := strconv.Atoi(s.UpTo)
		return id > lo && id <= hi
	})
}

// A delta pass finds deletions by counting ID ranges: with nothing changed it sends counts
// only; after three deals were deleted in three places it lists again exactly the ranges that
// hold them, and marks exactly those deleted; killed while it lists them again, the get that
// resumes it lists only what was left and ends as an uninterrupted one.
func TestDeltaRangesFindDeletions(t *testing.T) {
	t.Parallel()
	const deals = 8_000 // four ranges of deltaRangeRows (2,450)
	w, src, newEngine := rangesWorld(t, bitrixfake.Options{Deals: deals, Seed: 35}, deltaDealsEntity())
	ids := w.Portal.DealIDs()
	if len(ids) != deals {
		t.Fatalf("the portal has %d deals, want %d", len(ids), deals)
	}
	ranges := (deals + 2_449) / 2_450

	// Nothing changed: one batch of counts, nothing listed, nothing deleted.
	src.reset()
	st, err := newEngine().DeltaGet(w.Ctx, deltaDeals)
	if err != nil {
		t.Fatal(err)
	}
	if src.counts != 1 || src.counted != ranges || src.relists != 0 || len(src.other) != 0 || st.Deleted != 0 {
		t.Errorf("nothing changed: %d count requests of %d ranges (want 1 of %d), %d re-listings, other %v, %d deleted",
			src.counts, src.counted, ranges, src.relists, src.other, st.Deleted)
	}
	if inv := w.Inventory(deltaDeals); !inv.Complete || inv.Kind != engine.PassDelta || inv.SourceTotal == nil || *inv.SourceTotal != deals {
		t.Errorf("nothing changed: inventory complete %v, kind %s, total %v", inv.Complete, inv.Kind, inv.SourceTotal)
	}

	// Three deals deleted in three ranges.
	gone := []int{ids[100], ids[4_000], ids[7_900]}
	for _, id := range gone {
		deleteOnPortal(w, bitrixfake.DeleteDeals, strconv.Itoa(id))
	}
	src.reset()
	if st, err = newEngine().DeltaGet(w.Ctx, deltaDeals); err != nil {
		t.Fatal(err)
	}
	if src.counts != 1 || src.relists != 3 || len(src.segments) != 3 || len(src.other) != 0 {
		t.Errorf("three deleted: %d count requests, %d re-listing requests of %d ranges (want 1, 3, 3), other %v",
			src.counts, src.relists, len(src.segments), src.other)
	}
	for _, id := range gone {
		if !holds(src.segments, id) {
			t.Errorf("deal %d deleted: no range listed again holds it (%v)", id, src.segments)
		}
	}
	want := []string{strconv.Itoa(gone[0]), strconv.Itoa(gone[1]), strconv.Itoa(gone[2])} // ids ascend
	if got := deletedIDs(w, deltaDeals); !slices.Equal(got, want) || st.Deleted != 3 {
		t.Errorf("deleted %v (get says %d), want %v", got, st.Deleted, want)
	}

	// Three more, and a kill while the second range is being listed again: the rerun (a get, which
	// resumes the pass) lists what is left, counts nothing, and concludes.
	gone = []int{ids[10], ids[5_000], ids[7_990]}
	for _, id := range gone {
		deleteOnPortal(w, bitrixfake.DeleteDeals, strconv.Itoa(id))
		want = append(want, strconv.Itoa(id))
	}
	slices.SortFunc(want, rest.CompareIDs)
	src.reset()
	ctx, cancel := context.WithCancel(w.Ctx)
	defer cancel()
	src.mu.Lock()
	src.cancelAt, src.cancel = 2, cancel
	src.mu.Unlock()
	one := func(c *engine.Config) { c.Concurrency = 1 } // one range at a time: the kill falls between two
	if _, err := newEngine(one).DeltaGet(ctx, deltaDeals); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed delta get: %v", err)
	}
	if got := len(deletedIDs(w, deltaDeals)); got != 3 {
		t.Errorf("killed delta get concluded deletions: %d deleted, want the 3 before", got)
	}
	if inv := w.Inventory(deltaDeals); inv.Complete {
		t.Errorf("killed delta get: its pass is complete")
	}
	src.mu.Lock()
	src.cancelAt = 0
	src.mu.Unlock()
	src.reset()
	if st, err = newEngine(one).Get(w.Ctx, deltaDeals); err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || src.counts != 0 || src.relists != 2 || len(src.other) != 0 {
		t.Errorf("rerun: resumed %v, %d count requests, %d re-listings (want 0, 2), other %v", st.Resumed, src.counts, src.relists, src.other)
	}
	if got := deletedIDs(w, deltaDeals); !slices.Equal(got, want) {
		t.Errorf("after the rerun deleted %v, want %v", got, want)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND status = $2`, deltaDeals, string(engine.StatusNew)); n != deals-len(want) {
		t.Errorf("%d deals NEW after the deltas, want the other %d as they were", n, deals-len(want))
	}
}

// A delta pass weighs its deletions as a full pass does: more than a tenth of the entity's live
// records refuses and marks nothing (the counts prove them gone, so no record is asked for by
// id), and --allow-mass-delete marks them.
func TestDeltaRangesMassDeleteRefused(t *testing.T) {
	t.Parallel()
	const deals = 300
	w, src, newEngine := rangesWorld(t, bitrixfake.Options{Deals: deals, Seed: 36}, deltaDealsEntity())
	ids := w.Portal.DealIDs()
	var want []string
	for i := 0; i < 40; i++ { // 13%
		id := ids[i*7]
		deleteOnPortal(w, bitrixfake.DeleteDeals, strconv.Itoa(id))
		want = append(want, strconv.Itoa(id))
	}
	src.reset()
	_, err := newEngine().DeltaGet(w.Ctx, deltaDeals)
	var refused *engine.MassDeleteError
	if !errors.As(err, &refused) || refused.Gone != 40 || refused.Live != deals {
		t.Fatalf("delta get after 40 of %d deleted: %v, want a refusal naming 40 of %d", deals, err, deals)
	}
	if got := deletedIDs(w, deltaDeals); len(got) != 0 {
		t.Errorf("a refused delta get marked %v deleted", got)
	}
	if src.counts != 1 || src.relists != 1 || len(src.other) != 0 {
		t.Errorf("refused: %d count requests, %d re-listings (want 1, 1), other %v", src.counts, src.relists, src.other)
	}
	st, err := newEngine(deletePolicy(engine.DeletionsKeep, true)).DeltaGet(w.Ctx, deltaDeals)
	if err != nil {
		t.Fatal(err)
	}
	if got := deletedIDs(w, deltaDeals); !slices.Equal(got, want) || st.Deleted != 40 {
		t.Errorf("allowed: deleted %v (get says %d), want %v", got, st.Deleted, want)
	}
}

// A chore a delta pass concludes deleted takes its comments with it; the other chores' comments
// stay as they were.
func TestDeltaRangesChildrenFollow(t *testing.T) {
	t.Parallel()
	w, _, newEngine := rangesWorld(t, bitrixfake.Options{Users: 20, Tasks: 150, TaskChatPercent: -1, TaskComments: 3, Seed: 37},
		enginetest.ChoresEntity(), choreCommentsEntity(), enginetest.PeopleEntity())
	ids := w.Portal.PortalIDs(bitrixfake.DeleteTasks)
	var gone []string
	for _, id := range []int{ids[5], ids[90]} {
		if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chore_comments' AND parent_source_id = $1`, strconv.Itoa(id)); n == 0 {
			t.Fatalf("chore %d has no comments to follow it", id)
		}
		deleteOnPortal(w, bitrixfake.DeleteTasks, strconv.Itoa(id))
		gone = append(gone, strconv.Itoa(id))
	}
	others := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chore_comments' AND NOT parent_source_id = ANY($1)`, gone)
	if _, err := newEngine().DeltaGet(w.Ctx, enginetest.Chores); err != nil {
		t.Fatal(err)
	}
	if got := deletedIDs(w, enginetest.Chores); !slices.Equal(got, gone) {
		t.Errorf("chores deleted %v, want %v", got, gone)
	}
	for _, id := range gone {
		n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chore_comments' AND parent_source_id = $1`, id)
		followed := w.Count(`SELECT count(*) FROM bitrix_records r JOIN status_history h ON h.machine = 'bitrix' AND h.record_id = r.id
WHERE r.entity = 'chore_comments' AND r.parent_source_id = $1 AND r.status = $2 AND h.to_status = $2 AND h.reason LIKE 'its chore was deleted%'`,
			id, string(engine.DeletedAtSource))
		if n == 0 || followed != n {
			t.Errorf("comments of chore %s: %d of %d followed it", id, followed, n)
		}
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'chore_comments' AND NOT parent_source_id = ANY($1) AND status = $2`,
		gone, string(engine.StatusNew)); n != others {
		t.Errorf("%d comments of the other chores as they were, want %d", n, others)
	}
}

// A range the portal counts more records in than are stored holds what the modification filter
// did not return (here a deal concluded deleted before, back on the portal unmodified): the
// range is listed again, the deal is read again, and the pass's reason makes the next pass full.
func TestDeltaRangesUnexplainedAddition(t *testing.T) {
	t.Parallel()
	w, src, newEngine := rangesWorld(t, bitrixfake.Options{Deals: 120, Seed: 38}, deltaDealsEntity())
	back := strconv.Itoa(w.Portal.DealIDs()[60])
	r := w.Record(deltaDeals, back)
	c := status.Change{Reason: "test: deleted", Code: engine.CodeDeletedAtSource, Actor: "test"}
	if _, err := engine.Machine.MoveMany(w.Ctx, w.Pool, []int64{r.ID}, r.Status, engine.DeletedAtSource, c); err != nil {
		t.Fatal(err)
	}
	src.reset()
	if _, err := newEngine().DeltaGet(w.Ctx, deltaDeals); err != nil {
		t.Fatal(err)
	}
	if r := w.Record(deltaDeals, back); r.Status != engine.StatusNew {
		t.Errorf("deal %s back on the portal: %s, want NEW", back, r.Status)
	}
	if src.counts != 1 || src.relists != 1 {
		t.Errorf("%d count requests, %d re-listings, want 1 and 1", src.counts, src.relists)
	}
	inv := w.Inventory(deltaDeals)
	if inv.Reason == nil || !strings.Contains(*inv.Reason, "modification filter did not return") || !inv.Complete {
		t.Errorf("pass reason %v (complete %v), want the unexplained count named", inv.Reason, inv.Complete)
	}
	if got := deletedIDs(w, deltaDeals); len(got) != 0 {
		t.Errorf("deleted %v, want none", got)
	}
}

// typedItems reads the items of the fake portal's two smart process types, each with an ID scan
// of its own (a Scope, an IDPrefix), as the smart entity does.
type typedItems struct{}

var itemTypes = []int{1038, 1042}

func itemScan(et int) *engine.IDScan {
	return &engine.IDScan{Scan: rest.Scan{Method: "crm.item.list",
		Params:  map[string]any{"entityTypeId": et, "select": []string{"*"}},
		IDField: "id", RowsPath: []string{"items"}, Order: map[string]any{"order": map[string]any{"id": "ASC"}}, IDListOp: "@"},
		CountParams: map[string]any{"select": []string{"id"}},
		Scope:       fmt.Sprintf("items_%d", et), IDPrefix: strconv.Itoa(et) + ":", Fill: map[string]any{"entityTypeId": et}}
}

func (typedItems) Get(ctx context.Context, g *engine.GetRun) error {
	if _, err := g.ResumeOrStart(ctx); err != nil {
		return err
	}
	for _, et := range itemTypes {
		st := engine.GetStats{Counts: g.Stats.Counts}
		if err := itemScan(et).Get(ctx, &engine.GetRun{Env: g.Env, Ent: g.Ent, Stats: &st, Start: g.Start}); err != nil {
			return err
		}
	}
	g.Stats.Complete = true
	return g.Env.Store().RollUp(ctx, engine.RollUpParams{Entity: g.Ent.Name, Complete: true})
}

func (typedItems) Total(context.Context, engine.Env, *engine.Entity) (int64, error) {
	return 0, engine.ErrNoTotal
}

func (typedItems) Plan(context.Context, engine.Env, *engine.Entity) ([]engine.EntityPlan, error) {
	return nil, nil
}

func (typedItems) Scans(context.Context, engine.Env, *engine.Entity) ([]*engine.IDScan, error) {
	return []*engine.IDScan{itemScan(itemTypes[0]), itemScan(itemTypes[1])}, nil
}

// An entity read by one ID scan per type concludes a delta pass's deletions type by type: in the
// ranges the delta type listed again, by that type's prefix; a type whose pass was full, as a
// full pass does (what it did not see since the entity's pass started).
func TestDeltaRangesTypeByType(t *testing.T) {
	t.Parallel()
	items := &engine.Entity{Name: "items", Lister: typedItems{}, IDField: "id", Batch: 50, NoFields: "test items",
		Dates: []string{"createdTime", "updatedTime", "movedTime", "lastActivityTime", "begindate", "closedate"}}
	w, src, newEngine := rangesWorld(t, bitrixfake.Options{Users: 5, Companies: 3, Contacts: 3, Deals: 3, SmartItems: 60, Seed: 39}, items)
	// A record of each type the portal does not have (as if deleted there): a copy of its
	// type's highest item, one id higher; the full type's read before its pass started.
	var phantoms []string
	for _, et := range itemTypes {
		top := pickOne(w, `SELECT source_id FROM bitrix_records WHERE entity = 'items' AND starts_with(source_id, $1)
ORDER BY length(source_id) DESC, source_id DESC LIMIT 1`, strconv.Itoa(et)+":")
		n, _ := strconv.Atoi(top[len(strconv.Itoa(et))+1:])
		phantom := fmt.Sprintf("%d:%d", et, n+1)
		if _, err := w.Pool.Exec(w.Ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum, dates, fetched_at)
SELECT entity, $2, payload, checksum, dates, fetched_at - make_interval(days => $3) FROM bitrix_records
WHERE entity = 'items' AND source_id = $1`, top, phantom, len(phantoms)); err != nil {
			t.Fatal(err)
		}
		phantoms = append(phantoms, phantom)
	}
	src.reset()
	st, err := newEngine().DeltaGet(w.Ctx, "items", "items_1038")
	if err != nil {
		t.Fatal(err)
	}
	if got := deletedIDs(w, "items"); !slices.Equal(got, phantoms) || st.Deleted != 2 {
		t.Errorf("deleted %v (get says %d), want %v", got, st.Deleted, phantoms)
	}
	if src.counts != 1 || src.relists != 1 || len(src.other) != 0 {
		t.Errorf("%d count requests, %d re-listings (want 1, 1), other %v", src.counts, src.relists, src.other)
	}
}

// Deletions a delta pass concludes follow the policy as a full pass's do: under propagate, set
// removes them from the target.
func TestDeltaRangesPropagate(t *testing.T) {
	t.Parallel()
	w, _, newEngine := rangesWorld(t, bitrixfake.Options{Deals: 120, Seed: 40}, deltaDealsEntity())
	propagate := deletePolicy(engine.DeletionsPropagate, false)
	w.Phases(newEngine(propagate), deltaDeals, "set")
	ids := w.Portal.DealIDs()
	gone := []string{strconv.Itoa(ids[3]), strconv.Itoa(ids[77])}
	for _, id := range gone {
		deleteOnPortal(w, bitrixfake.DeleteDeals, id)
	}
	if _, err := newEngine(propagate).DeltaGet(w.Ctx, deltaDeals); err != nil {
		t.Fatal(err)
	}
	w.Phases(newEngine(propagate), deltaDeals, "set")
	for _, id := range gone {
		requireGone(w, engine.DeletionsPropagate, deltaDeals, id)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND status = $2`, deltaDeals, string(engine.ImportOK)); n != 118 {
		t.Errorf("%d deals IMPORT_OK, want the other 118", n)
	}
}
