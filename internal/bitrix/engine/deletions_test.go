package engine_test

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// deletionPolicies are both deletion policies, for tests that run under each.
var deletionPolicies = []engine.Deletions{engine.DeletionsKeep, engine.DeletionsPropagate}

// deletePolicy is an engine option: the deletion policy, and whether a mass deletion is allowed.
func deletePolicy(policy engine.Deletions, allowMass bool) func(*engine.Config) {
	return func(e *engine.Config) { e.Deletions, e.AllowMassDelete = policy, allowMass }
}

// deleteOnPortal deletes a record on the fake portal, as a person does; kind is the portal's
// name of what it deletes (bitrixfake.DeleteCompanies).
func deleteOnPortal(w *enginetest.World, kind, sourceID string) {
	w.T.Helper()
	id, err := strconv.Atoi(sourceID)
	if err != nil {
		w.T.Fatal(err)
	}
	if err := w.Portal.Delete(kind, id); err != nil {
		w.T.Fatal(err)
	}
}

// pickOne returns the first value of a one-column query, failing when there is none.
func pickOne(w *enginetest.World, sql string, args ...any) string {
	w.T.Helper()
	var s string
	if err := w.Pool.QueryRow(w.Ctx, sql, args...).Scan(&s); err != nil {
		w.T.Fatalf("%s: %v", sql, err)
	}
	return s
}

// requireGone checks a record and its children after the deletion of the record on the portal
// and a set under the policy: their status, and whether the target holds the record.
func requireGone(w *enginetest.World, policy engine.Deletions, entity, sourceID string, children ...string) {
	w.T.Helper()
	want := engine.DeletedAtSource
	if policy == engine.DeletionsPropagate {
		want = engine.DeletedOnTarget
	}
	if r := w.Record(entity, sourceID); r.Status != want {
		w.T.Errorf("%s %s deleted on the portal: %s %q, want %s", entity, sourceID, r.Status, r.LastError, want)
	}
	_, held := w.Target.Lookup(entity, "source:"+entity+":"+sourceID)
	if held != (policy == engine.DeletionsKeep) {
		w.T.Errorf("%s %s deleted on the portal, policy %s: the target holds it: %v", entity, sourceID, policy, held)
	}
	for _, child := range children {
		n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND parent_source_id = $2`, child, sourceID)
		followed := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND parent_source_id = $2 AND status = $3`,
			child, sourceID, string(want))
		if n == 0 || followed != n {
			w.T.Errorf("%s of %s %s: %d of %d followed it to %s", child, entity, sourceID, followed, n, want)
		}
	}
}

// requireCountsHold fails on any verify problem of counts: a deletion must not leave the target
// "holding more than expected", nor the records read "more than the portal has".
func requireCountsHold(t *testing.T, r engine.VerifyReport) {
	t.Helper()
	for _, p := range r.Problems {
		if strings.Contains(p, "target holds") || strings.Contains(p, "the source has") || strings.Contains(p, "deleted on the portal") {
			t.Errorf("verify %s after a deletion: %s", r.Entity, p)
		}
	}
}

// statusText is `bitrix status` as people read it.
func statusText(t *testing.T, w *enginetest.World) string {
	t.Helper()
	rep, err := w.Engine().Report(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestDeletedRecordUnderEachPolicy migrates an entity of each lister kind that concludes
// deletions (an ID scan filtered by a list of ids, one filtered by id, offset pages with a child
// walked per key), deletes one of its records on the portal and migrates it again: under keep the
// record is DELETED_AT_SOURCE and stays on the target, under propagate it is removed from the
// target (DELETED_ON_TARGET), its children follow it, verify's counts hold, verify under keep
// lists it and `bitrix status` names it.
func TestDeletedRecordUnderEachPolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		entity, kind string
		portal       bitrixfake.Options
		before       []string // migrated first
		children     []string // must follow the record
		pick         string   // a record of the entity to delete (with children, when it has some)
	}{
		{entity: enginetest.Firms, kind: bitrixfake.DeleteCompanies, portal: bitrixfake.Options{Users: 30, Companies: 40, Seed: 41},
			before: []string{enginetest.People},
			pick:   `SELECT source_id FROM bitrix_records WHERE entity = 'firms' AND status = 'IMPORT_OK' ORDER BY id LIMIT 1`},
		{entity: enginetest.Chores, kind: bitrixfake.DeleteTasks, portal: bitrixfake.Options{Users: 40, Groups: 6, Tasks: 80, Seed: 43},
			before: []string{enginetest.People},
			pick: `SELECT source_id FROM bitrix_records WHERE entity = 'chores' AND status = 'IMPORT_OK'
AND NOT EXISTS (SELECT 1 FROM bitrix_records s WHERE s.entity = 'chores' AND s.payload->>'parentId' = bitrix_records.source_id)
ORDER BY id LIMIT 1`},
		{entity: enginetest.Posts, kind: bitrixfake.DeleteFeed, portal: bitrixfake.Options{Users: 40, Groups: 6, Posts: 60, Seed: 44},
			before: []string{enginetest.People, enginetest.Teams}, children: []string{enginetest.PostAudiences},
			pick: `SELECT p.source_id FROM bitrix_records p WHERE p.entity = 'posts' AND p.status = 'IMPORT_OK'
AND EXISTS (SELECT 1 FROM bitrix_records c WHERE c.entity = 'post_audiences' AND c.parent_source_id = p.source_id AND c.status = 'IMPORT_OK')
ORDER BY p.id LIMIT 1`},
	} {
		for _, policy := range deletionPolicies {
			t.Run(c.entity+"/"+string(policy), func(t *testing.T) {
				t.Parallel()
				w := enginetest.New(t, enginetest.Options{Portal: c.portal})
				e := w.Engine(deletePolicy(policy, false))
				w.Migrate(e, c.before...)
				// Verify may name records out of the webhook's reach; set is what matters here.
				w.Phases(e, c.entity, "get", "set")
				if _, err := e.Verify(w.Ctx, c.entity); err != nil && !errors.Is(err, engine.ErrNotVerified) {
					t.Fatal(err)
				}
				id := pickOne(w, c.pick)
				deleteOnPortal(w, c.kind, id)
				w.Phases(e, c.entity, "get", "set")
				r, err := e.Verify(w.Ctx, c.entity)
				if err != nil && !errors.Is(err, engine.ErrNotVerified) {
					t.Fatal(err)
				}
				requireGone(w, policy, c.entity, id, c.children...)
				requireCountsHold(t, r)
				if policy == engine.DeletionsKeep {
					// The record, and its children with it, each listed by its portal id.
					family := w.Count(`SELECT count(*) FROM bitrix_records WHERE (entity = $1 AND source_id = $2)
OR (entity = ANY($3) AND parent_source_id = $2)`, c.entity, id, c.children)
					var listed []string
					for _, d := range r.DeletedAtSource {
						if d.Entity == c.entity {
							listed = append(listed, d.SourceID)
						}
					}
					if r.DeletedAtSourceCount != int64(family) || len(listed) != 1 || listed[0] != id {
						t.Errorf("verify under keep lists %d deleted records %+v, want %s %s and its %d children", r.DeletedAtSourceCount,
							r.DeletedAtSource, c.entity, id, family-1)
					}
				}
				metric := `records_processed_total{entity=` + c.entity + `,outcome=DELETED_ON_TARGET}`
				if policy == engine.DeletionsPropagate && w.Metric(metric) != 1 {
					t.Errorf("%s = %v, want 1", metric, w.Metric(metric))
				}
				if !strings.Contains(statusText(t, w), id) {
					t.Errorf("bitrix status does not name the deleted %s %s", c.entity, id)
				}
			})
		}
	}
}

// TestMassDeleteRefusedUnlessAllowed deletes just over a tenth of the firms on the portal: a
// test_limit pass concludes nothing, a full pass refuses to conclude that many deletions
// (ErrMassDelete, naming the count) and marks none, and one allowed to concludes them all.
func TestMassDeleteRefusedUnlessAllowed(t *testing.T) {
	t.Parallel()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 30, Companies: 60, Seed: 45}})
	w.Migrate(w.Engine(), enginetest.People, enginetest.Firms)
	ids := w.Portal.PortalIDs(bitrixfake.DeleteCompanies)
	gone := len(ids)/10 + 1 // just over a tenth
	for _, id := range ids[:gone] {
		deleteOnPortal(w, bitrixfake.DeleteCompanies, strconv.Itoa(id))
	}
	deleted := `SELECT count(*) FROM bitrix_records WHERE entity = 'firms' AND status = 'DELETED_AT_SOURCE'`
	// A test_limit pass does not see the whole portal: it concludes nothing.
	if _, err := w.Engine(func(e *engine.Config) { e.TestLimit = 5 }).Get(w.Ctx, enginetest.Firms); err != nil {
		t.Fatalf("get with test_limit: %v", err)
	}
	if n := w.Count(deleted); n != 0 {
		t.Fatalf("a test_limit get marked %d firms deleted", n)
	}
	_, err := w.Engine().Get(w.Ctx, enginetest.Firms)
	if !errors.Is(err, engine.ErrMassDelete) || !strings.Contains(err.Error(), strconv.Itoa(gone)+" of the "+strconv.Itoa(len(ids))) {
		t.Fatalf("get after %d of %d firms deleted: %v, want a refusal naming the count", gone, len(ids), err)
	}
	if n := w.Count(deleted); n != 0 {
		t.Fatalf("a refused get marked %d firms deleted", n)
	}
	e := w.Engine(deletePolicy(engine.DeletionsKeep, true))
	st, err := e.Get(w.Ctx, enginetest.Firms)
	if err != nil || st.Deleted != gone {
		t.Fatalf("get with --allow-mass-delete: %d deleted, %v; want %d", st.Deleted, err, gone)
	}
	if n := w.Count(deleted); n != gone {
		t.Errorf("%d firms DELETED_AT_SOURCE, want %d", n, gone)
	}
	w.Phases(e, enginetest.Firms, "set", "verify")
}

// TestReappearingRecordGoesBackToTheFlow: a firm a get concluded deleted (say, while the
// webhook's user could not see it) and set removed from the target, that the portal then lists
// again, is imported again and verified.
func TestReappearingRecordGoesBackToTheFlow(t *testing.T) {
	t.Parallel()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 30, Companies: 40, Seed: 46}})
	e := w.Engine(deletePolicy(engine.DeletionsPropagate, false))
	w.Migrate(e, enginetest.People, enginetest.Firms)
	firm := pickOne(w, `SELECT source_id FROM bitrix_records WHERE entity = 'firms' ORDER BY id LIMIT 1`)
	r := w.Record(enginetest.Firms, firm)
	c := status.Change{Reason: "test: deleted", Code: engine.CodeDeletedAtSource, Actor: "test"}
	if _, err := engine.Machine.MoveMany(w.Ctx, w.Pool, []int64{r.ID}, engine.ImportOK, engine.DeletedAtSource, c); err != nil {
		t.Fatal(err)
	}
	w.Phases(e, enginetest.Firms, "set")
	requireGone(w, engine.DeletionsPropagate, enginetest.Firms, firm)
	w.Migrate(e, enginetest.Firms)
	if r := w.Record(enginetest.Firms, firm); r.Status != engine.ImportOK {
		t.Fatalf("firm %s listed again: %s %q, want IMPORT_OK", firm, r.Status, r.LastError)
	}
	if _, ok := w.Target.Lookup(enginetest.Firms, "source:firms:"+firm); !ok {
		t.Errorf("firm %s listed again is not on the target", firm)
	}
}

// TestShiftedPostIsNotDeleted deletes a post of the first page of offset pages while get reads
// it, so that the next page skips a post the portal still has: the skipped one is confirmed by id
// and left alone, and the next pass concludes the deleted one, and only it.
func TestShiftedPostIsNotDeleted(t *testing.T) {
	t.Parallel()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 30, Groups: 4, Posts: 70, Seed: 47}})
	e := w.Engine()
	w.Migrate(e, enginetest.People, enginetest.Teams)
	w.Phases(e, enginetest.Posts, "get")
	var armed atomic.Bool
	var victim atomic.Int64
	shifting := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		w.Portal.ServeHTTP(rec, r)
		if strings.Contains(r.URL.Path, "log.blogpost.get") && armed.CompareAndSwap(true, false) {
			var page struct {
				Result []struct {
					ID string `json:"ID"`
				} `json:"result"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Result) == 0 {
				t.Errorf("first page of posts: %v %s", err, rec.Body.String())
			} else {
				id, _ := strconv.Atoi(page.Result[0].ID)
				victim.Store(int64(id))
				if err := w.Portal.Delete(bitrixfake.DeleteFeed, id); err != nil {
					t.Error(err)
				}
			}
		}
		maps.Copy(rw.Header(), rec.Header())
		rw.WriteHeader(rec.Code)
		_, _ = rw.Write(rec.Body.Bytes())
	})
	srv := httptest.NewServer(shifting)
	defer srv.Close()
	src, err := rest.New(srv.URL+w.Portal.WebhookPath(), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1),
		Retry: retry.Policy{Delays: []time.Duration{0, 0, 0}}, Logger: w.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	e = w.Engine(func(e *engine.Config) { e.Source = src })
	armed.Store(true)
	w.Phases(e, enginetest.Posts, "get")
	if !strings.Contains(w.Log.String(), "records the pass missed are still on the portal") {
		t.Fatal("the pass missed no post: the pages did not shift, the test proves nothing")
	}
	// The deleted post was read before it went: the next pass concludes it, and only it.
	deleted := `SELECT count(*) FROM bitrix_records WHERE entity = 'posts' AND status = 'DELETED_AT_SOURCE'`
	if n := w.Count(deleted); n != 0 {
		t.Fatalf("%d posts concluded deleted by the pass that missed a live one", n)
	}
	w.Phases(e, enginetest.Posts, "get")
	rows := w.Count(deleted)
	if rows != 1 || w.Record(enginetest.Posts, strconv.FormatInt(victim.Load(), 10)).Status != engine.DeletedAtSource {
		t.Errorf("%d posts concluded deleted; want only the deleted post %d", rows, victim.Load())
	}
}

// TestEmptyPageInARangeDeletesNothing has the portal answer one page of the firms' ID range
// empty, in the middle of the range, while a firm after it was really deleted: the range ends
// there and the pass misses the firms after the page. They are asked for by id: the deleted one
// is concluded, the others stay as they were, verify passes after a set, and the next get reads
// them all again. With --allow-mass-delete too: the refusal is not what saves them.
func TestEmptyPageInARangeDeletesNothing(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run("allow-mass-delete="+strconv.FormatBool(allow), func(t *testing.T) {
			t.Parallel()
			emptyPageInARange(t, allow)
		})
	}
}

func emptyPageInARange(t *testing.T, allowMassDelete bool) {
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 30, Companies: 130, Seed: 48}})
	e := w.Engine(deletePolicy(engine.DeletionsKeep, allowMassDelete))
	w.Migrate(e, enginetest.People, enginetest.Firms)
	ids := w.Portal.PortalIDs(bitrixfake.DeleteCompanies)
	if len(ids) < 120 {
		t.Fatalf("%d firms: the range needs pages after the empty one", len(ids))
	}
	victim := strconv.Itoa(ids[100])
	deleteOnPortal(w, bitrixfake.DeleteCompanies, victim)
	w.Portal.EmptyPageAfter("crm.item.list", ids[49])
	faults := w.Portal.Stats().Faults

	st, err := e.Get(w.Ctx, enginetest.Firms)
	if err != nil {
		t.Fatalf("get with a page answered empty: %v", err)
	}
	if w.Portal.Stats().Faults != faults+1 {
		t.Fatal("the portal answered no page empty: the test proves nothing")
	}
	if !strings.Contains(w.Log.String(), "records the pass missed are still on the portal") {
		t.Error("the firms the pass missed were not reported as still on the portal")
	}
	deleted := `SELECT count(*) FROM bitrix_records WHERE entity = 'firms' AND status = 'DELETED_AT_SOURCE'`
	if n := w.Count(deleted); n != 1 || st.Deleted != 1 || w.Record(enginetest.Firms, victim).Status != engine.DeletedAtSource {
		t.Fatalf("%d firms concluded deleted (get says %d), firm %s is %s; want only the deleted firm", n, st.Deleted, victim,
			w.Record(enginetest.Firms, victim).Status)
	}
	w.Phases(e, enginetest.Firms, "set")
	r, err := e.Verify(w.Ctx, enginetest.Firms)
	if err != nil {
		t.Fatal(err)
	}
	requireCountsHold(t, r)
	if len(r.Problems) != 0 {
		t.Errorf("verify after the missed pass: %v", r.Problems)
	}

	// The next get is a new pass: it reads every firm again, the missed ones included.
	st, err = e.Get(w.Ctx, enginetest.Firms)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Counts[enginetest.Firms]; c == nil || c.Rows != len(ids)-1 || st.Deleted != 0 {
		t.Errorf("the next get read %+v and deleted %d; want the %d firms the portal has, none deleted", c, st.Deleted, len(ids)-1)
	}
}

// TestIgnoredIDFilterDeletesNothing has a portal whose crm.item.list leaves the @id filter out
// (lists as if it were not there) while a page of the firms' range is answered empty: the
// confirmation's answers hold firms it did not ask for, which proves nothing about the ones it
// did, so the get fails naming that (ErrFilterIgnored) and no firm is concluded deleted.
func TestIgnoredIDFilterDeletesNothing(t *testing.T) {
	t.Parallel()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 30, Companies: 130, Seed: 49}})
	e := w.Engine(deletePolicy(engine.DeletionsKeep, true))
	w.Migrate(e, enginetest.People, enginetest.Firms)
	ids := w.Portal.PortalIDs(bitrixfake.DeleteCompanies)
	w.Portal.EmptyPageAfter("crm.item.list", ids[49])
	w.Portal.IgnoreFilterKey("crm.item.list", "@id")
	faults := w.Portal.Stats().Faults

	_, err := e.Get(w.Ctx, enginetest.Firms)
	if !errors.Is(err, engine.ErrFilterIgnored) {
		t.Fatalf("get whose confirmation the portal answered without its id filter: %v, want ErrFilterIgnored", err)
	}
	if w.Portal.Stats().Faults < faults+2 {
		t.Fatal("the portal neither answered a page empty nor left a filter out: the test proves nothing")
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'firms' AND status = 'DELETED_AT_SOURCE'`); n != 0 {
		t.Fatalf("%d firms concluded deleted from answers that ignored the filter", n)
	}
}
