package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// The plan of a rerun says each entity's next pass, full or delta, and why, as get will decide
// it from the inventory, and foretells a delta pass's calls: the filtered scan of what changed
// (counted by the portal), the ID-range counts for deletions, and, for a per-record child, one
// command per changed owner. The inventories are set up as a complete pass leaves them.
func TestPlanPredictsTheNextPass(t *testing.T) {
	t.Parallel()
	const firmCount = 3_000
	reg := enginetest.Registry()
	firms, _ := reg.Entity(enginetest.Firms)
	scan := firms.Lister.(*engine.IDScan)
	scan.Modified = []string{"updatedTime"} // declared by the entities that have one (d-idscan)
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 20, Companies: firmCount, Seed: 4}, Registry: reg})
	plan := func(e *engine.Engine) map[string]engine.EntityPlan {
		t.Helper()
		p, err := e.Plan(w.Ctx, rest.DefaultRate())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]engine.EntityPlan{}
		for _, ep := range p.Entities {
			out[ep.Entity] = ep
		}
		raw, _ := json.Marshal(out[enginetest.Firms])
		if !strings.Contains(string(raw), `"pass":`) || !strings.Contains(string(raw), `"pass_reason":`) {
			t.Errorf("the plan's JSON lacks the pass: %s", raw)
		}
		return out
	}
	want := func(when string, ep engine.EntityPlan, kind engine.PassKind, reason string) {
		t.Helper()
		if ep.Pass != kind || !strings.Contains(ep.PassReason, reason) {
			t.Errorf("%s: %s's next pass is %s (%s), want %s (%s)", when, ep.Entity, ep.Pass, ep.PassReason, kind, reason)
		}
	}
	e := w.Engine()
	first := plan(e)
	want("before any get", first[enginetest.Firms], engine.PassFull, "no complete full pass yet")
	want("before any get", first[enginetest.FirmNotes], engine.PassFull, "no complete full pass yet")
	want("before any get", first[enginetest.People], engine.PassFull, "no modification filter")
	for _, ent := range []string{enginetest.Firms, enginetest.FirmNotes} {
		if _, err := e.Get(w.Ctx, ent); err != nil {
			t.Fatal(err)
		}
	}

	// As a complete full pass leaves the inventory (d-idscan records the portal's clock and the
	// fingerprint when the pass starts): since is taken where a tenth of the firms changed after it.
	var dates []time.Time
	rows, err := w.Pool.Query(w.Ctx, `SELECT payload->>'updatedTime' FROM bitrix_records WHERE entity = $1`, enginetest.Firms)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		d, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		dates = append(dates, d)
	}
	if rows.Err() != nil || len(dates) < firmCount-10 { // the fake's portal deletes one or two
		t.Fatalf("read %d firms' updatedTime: %v", len(dates), rows.Err())
	}
	slices.SortFunc(dates, time.Time.Compare)
	since := dates[len(dates)*9/10]
	changed := 0
	for _, d := range dates {
		if d.After(since) {
			changed++
		}
	}
	fp, err := scan.PassFingerprint(w.Ctx, e, firms)
	if err != nil {
		t.Fatal(err)
	}
	setUp := func(lastFull time.Time) {
		t.Helper()
		_, err := w.Pool.Exec(w.Ctx, `UPDATE bitrix_inventory SET portal_started_at = $2, fingerprint = $3, last_full_at = $4
WHERE entity = $1`, enginetest.Firms, since.Add(engine.DefaultSkewMargin), fp, lastFull)
		if err != nil {
			t.Fatal(err)
		}
	}
	setUp(time.Now().Add(-time.Hour))

	// The fake portal does not filter crm.item.list by updatedTime yet (d-fake adds it): its
	// count of the firms modified since is given from the stored dates.
	e = w.Engine(func(c *engine.Config) { c.Source = &modifiedCounts{Source: w.Source, dates: dates} })
	next := plan(e)
	want("after a complete pass", next[enginetest.Firms], engine.PassDelta, "the last pass completed")
	want("after a complete pass", next[enginetest.FirmNotes], engine.PassDelta, "only the records they read")
	want("after a complete pass", next[enginetest.People], engine.PassFull, "no modification filter")
	f := next[enginetest.Firms]
	t.Logf("firms' next pass: %s (%s), %d changed, %d calls: %s; firm notes: %d calls", f.Pass, f.PassReason, f.Changed, f.Calls, f.How,
		next[enginetest.FirmNotes].Calls)
	// The whole listing's bounds (the portal's clock), the filtered scan of the changed firms
	// (its first page counts them), and one call of ID-range counts: 3,000 firms are 2 ranges.
	if f.Changed != int64(changed) || f.Calls != engine.IDScanCalls(int64(changed))+2 || f.Records != first[enginetest.Firms].Records {
		t.Errorf("delta plan of firms: %d changed in %d calls of %d records; want %d changed in %d calls of %d",
			f.Changed, f.Calls, f.Records, changed, engine.IDScanCalls(int64(changed))+2, first[enginetest.Firms].Records)
	}
	if n := next[enginetest.FirmNotes]; n.Calls != (changed+49)/50 {
		t.Errorf("delta plan of firm notes: %d calls, want one per 50 changed firms: %d", n.Calls, (changed+49)/50)
	}
	if f.Calls >= first[enginetest.Firms].Calls+first[enginetest.FirmNotes].Calls {
		t.Errorf("the delta pass is planned at %d calls, no fewer than the full pass's %d", f.Calls, first[enginetest.Firms].Calls)
	}

	// A full pass when asked, and once the last full pass is older than FullEvery.
	full := plan(w.Engine(func(c *engine.Config) {
		c.Full = true
		c.Source = &modifiedCounts{Source: w.Source, dates: dates}
	}))
	want("with --full", full[enginetest.Firms], engine.PassFull, "asked with --full")
	want("with --full", full[enginetest.FirmNotes], engine.PassFull, "asked with --full")
	if full[enginetest.Firms].Calls != first[enginetest.Firms].Calls {
		t.Errorf("with --full: %d calls, want the first pass's %d", full[enginetest.Firms].Calls, first[enginetest.Firms].Calls)
	}
	setUp(time.Now().Add(-8 * 24 * time.Hour))
	old := plan(e)
	want("a week after the last full pass", old[enginetest.Firms], engine.PassFull, "a full pass is due every")
	want("a week after the last full pass", old[enginetest.FirmNotes], engine.PassFull, "is full")
}

// modifiedCounts answers the count of crm.item.list filtered by >updatedTime from the dates
// given, and passes every other call to the portal.
type modifiedCounts struct {
	engine.Source
	dates []time.Time
}

func (m *modifiedCounts) Call(ctx context.Context, method string, params any) (*rest.Response, error) {
	p, _ := params.(map[string]any)
	filter, _ := p["filter"].(map[string]any)
	since, ok := filter[">updatedTime"].(string)
	if method != "crm.item.list" || !ok {
		return m.Source.Call(ctx, method, params)
	}
	t, err := time.Parse(time.RFC3339, since)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, d := range m.dates {
		if d.After(t) {
			n++
		}
	}
	return &rest.Response{Result: json.RawMessage(`{"items":[]}`), Total: &n}, nil
}
