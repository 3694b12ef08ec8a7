package bitrix_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// Issue 35's acceptance: after a complete migration and about 1% of the portal changed, `bitrix
// migrate` exits 0 with every change on the target exactly once and every deletion found, at no
// more than 15% of the first migration's portal requests; a rerun with nothing changed sends
// nothing and costs no more than 10%.

// deltaPortal is the demo's mix (cmd/fakes' defaults) at a fifth: every entity of the catalog
// has records, tasks have comments and checklists, deals product rows and timeline comments. No
// Open Channel conversation: its guest is no portal user, and migrate would stop at chats.
var deltaPortal = bitrixfake.Options{Seed: 35, Users: 100, Groups: 8, Chats: 12, MessagesPerChat: 12, Posts: 24,
	PostComments: 3, Tasks: 60, TaskComments: 4, Companies: 60, Contacts: 100, Deals: 200, SmartItems: 40, Workflows: 4}

// deltaPortalSmall is deltaPortal at half its size, for what does not depend on size (the other
// deletion policy).
var deltaPortalSmall = bitrixfake.Options{Seed: 35, Users: 50, Groups: 4, Chats: 6, MessagesPerChat: 6, Posts: 12,
	PostComments: 3, Tasks: 30, TaskComments: 4, Companies: 30, Contacts: 50, Deals: 100, SmartItems: 20, Workflows: 4}

// issuePortal is the independent portal issue 35 measured (4,000 deals, 2,500 contacts, 1,000
// companies, 1,500 tasks, with chats, feed and workflows), where a first migration costs
// hundreds of requests and the issue's bounds on a rerun's requests apply.
var issuePortal = bitrixfake.Options{Seed: 35, Users: 200, Groups: 20, Chats: 30, MessagesPerChat: 20, Posts: 60,
	PostComments: 3, Tasks: 1_500, TaskComments: 4, Companies: 1_000, Contacts: 2_500, Deals: 4_000, SmartItems: 100, Workflows: 6}

// perRecordMethods are the methods a get runs once per record of another entity (product rows
// and timeline comments by deal, a contact's companies, a task's checklist and old-card
// comments): what a first migration spends most of its requests on (issue 35), and what a rerun
// must run only for the records that changed.
var perRecordMethods = []string{"crm.item.productrow.list", "crm.timeline.comment.list", "crm.contact.company.items.get",
	"task.checklistitem.getlist", "task.commentitem.getlist"}

// costBounds are the bounds acceptDelta holds the reruns' cost to.
type costBounds int

const (
	// costLogged only logs the reruns' cost.
	costLogged costBounds = iota
	// costPerRecord bounds the runs of the per-record methods of the rerun with nothing changed to
	// 10% of the first migration's: it reads again only the owners its margin for clock skew
	// covers, whatever the portal's size. (The rerun after the churn is not bounded here: on a
	// portal this small, one change of every kind is some 3% of the records, a deletion in each
	// CRM entity among them, and the ID range a deletion re-lists is much of an entity.)
	costPerRecord
	// costRequests bounds the reruns as the issue does, on its mix of 1%: after the churn at most
	// 15% of the first migration's portal requests and per-record method runs, with nothing
	// changed at most 10%.
	costRequests
)

// TestDeltaRerunAcceptance is issue 35's acceptance on the demo's mix at a size make test
// affords, with both deletion policies. Its first migration makes about a hundred requests, most
// of them every entity's own few (its fields, its first page, the plan's counts), which a rerun
// makes too: the issue's bounds on requests are checked where they mean something, on the
// issue's portal (TestDeltaRerunAcceptanceIssuePortal). Here the rerun with nothing changed is
// held to 10% of the portal's runs of the methods a get runs once per record, the cost that grows
// with the portal (costPerRecord).
// What a rerun costs does not depend on the deletion policy: the second is checked on a smaller
// portal, for what it does with the deletions.
func TestDeltaRerunAcceptance(t *testing.T) {
	t.Parallel()
	t.Run("keep", func(t *testing.T) {
		t.Parallel()
		acceptDelta(t, deltaPortal, engine.DeletionsKeep, costPerRecord)
	})
	t.Run("propagate", func(t *testing.T) {
		t.Parallel()
		acceptDelta(t, deltaPortalSmall, engine.DeletionsPropagate, costLogged)
	})
}

// TestDeltaRerunAcceptanceIssuePortal is the acceptance on the issue's portal, with the issue's
// bounds on the reruns' portal requests. A few minutes: only with BITRIX_ACCEPT_ISSUE_PORTAL set,
// never in make test.
func TestDeltaRerunAcceptanceIssuePortal(t *testing.T) {
	if os.Getenv("BITRIX_ACCEPT_ISSUE_PORTAL") == "" {
		t.Skip("set BITRIX_ACCEPT_ISSUE_PORTAL=1 to run issue 35's acceptance on the issue's portal (minutes)")
	}
	acceptDelta(t, issuePortal, engine.DeletionsKeep, costRequests)
}

// acceptDelta migrates the portal, changes about 1% of it (Churn, and one change of every kind
// Churn left out at this size), reruns the migration and requires every change on the target
// exactly once, then reruns with nothing changed and requires nothing sent, and finally runs a
// full pass, which must find nothing the delta missed. The reruns' portal requests
// and their runs of the per-record methods must stay within the bounds given.
func acceptDelta(t *testing.T, opts bitrixfake.Options, policy engine.Deletions, bounds costBounds) {
	ctx := context.Background()
	portal := bitrixfake.New(opts)
	psrv := httptest.NewServer(portal)
	t.Cleanup(psrv.Close)
	w := newDeltaWorld(t, psrv.URL+portal.WebhookPath(), policy)

	runs := func() map[string]int { return portal.Stats().Calls }
	perRecord := func(before map[string]int) (n int) {
		after := runs()
		for _, m := range perRecordMethods {
			n += after[m] - before[m]
		}
		return n
	}

	r0 := runs()
	first := w.migrate(ctx, "first migration")
	firstPerRecord := perRecord(r0)
	snap := w.targetSnapshot()

	rep := portal.Churn(35, 0.01)
	everyKind(t, w, portal, &rep)
	t.Logf("churn:\n%s", rep)

	r1 := runs()
	before := w.target.Stats()
	churned := w.migrate(ctx, "rerun after the churn")
	churnedPerRecord := perRecord(r1)
	checkExactlyOnce(t, w, snap, before)
	alone := checkChurn(t, w, rep, snap)

	state, sent := w.state(), w.sent()
	r2 := runs()
	unchanged := w.migrate(ctx, "rerun with nothing changed")
	unchangedPerRecord := perRecord(r2)
	if got := w.sent(); got != sent {
		t.Errorf("the rerun with nothing changed sent to the target: %+v, before it %+v", got, sent)
	}
	w.sameState(t, state, "the rerun with nothing changed")

	// A full pass reads everything again: whatever the delta passes missed, it would find. What
	// they cannot see (a timeline comment deleted alone) it concludes, and nothing else.
	w.migrate(ctx, "full pass", func(c *engine.Config) { c.Full = true })
	want := sent
	if w.deletions == engine.DeletionsPropagate {
		want.Deleted += len(alone)
	}
	if got := w.sent(); got != want {
		t.Errorf("a full pass after the delta reruns sent to the target (the reruns missed it): %+v, want %+v", got, want)
	}
	for _, sid := range alone {
		if st := w.status(bitrix.CRMComments, sid); st != string(engine.DeletedAtSource) && st != string(engine.DeletedOnTarget) {
			t.Errorf("timeline comment %s deleted alone: %s after a full pass, want it concluded deleted", sid, st)
		}
	}
	w.sameStateBut(t, without(state, bitrix.CRMComments, alone), "a full pass after the delta reruns", bitrix.CRMComments, alone)

	t.Logf("portal requests: first %d, after the churn %d (%.1f%%), nothing changed %d (%.1f%%); per-record method runs %d, %d (%.1f%%), %d (%.1f%%)",
		first, churned, pct(churned, first), unchanged, pct(unchanged, first),
		firstPerRecord, churnedPerRecord, pct(int64(churnedPerRecord), int64(firstPerRecord)),
		unchangedPerRecord, pct(int64(unchangedPerRecord), int64(firstPerRecord)))
	if bounds < costPerRecord {
		return
	}
	if firstPerRecord == 0 {
		t.Fatal("the first migration ran no per-record method: the portal proves nothing of their cost")
	}
	if 100*unchangedPerRecord > 10*firstPerRecord {
		t.Errorf("the rerun with nothing changed ran the per-record methods %d times, the first migration %d: want at most 10%%",
			unchangedPerRecord, firstPerRecord)
	}
	if bounds >= costRequests {
		if 100*churnedPerRecord > 15*firstPerRecord {
			t.Errorf("the rerun after the churn ran the per-record methods %d times, the first migration %d: want at most 15%%",
				churnedPerRecord, firstPerRecord)
		}
		if 100*churned > 15*first {
			t.Errorf("the rerun after the churn made %d portal requests, the first migration %d: want at most 15%%", churned, first)
		}
		if 100*unchanged > 10*first {
			t.Errorf("the rerun with nothing changed made %d portal requests, the first migration %d: want at most 10%%", unchanged, first)
		}
	}
}

func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// deltaWorld is one migration's database, target and logs: what `ingest bitrix migrate` reruns
// against, one process after another.
type deltaWorld struct {
	t         *testing.T
	pool      *pgxpool.Pool
	target    *targetfake.Server
	targetURL string
	webhook   string
	deletions engine.Deletions
	logs      []string // each run's log, named
}

func newDeltaWorld(t *testing.T, webhook string, deletions engine.Deletions) *deltaWorld {
	t.Helper()
	w := &deltaWorld{t: t, pool: dbtest.Pool(t), target: targetfake.New(targetfake.Options{}), webhook: webhook, deletions: deletions}
	srv := httptest.NewServer(w.target)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/api/v1/")
	u.User = url.UserPassword("import", w.target.Token())
	w.targetURL = u.String()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("engine logs:\n%s", strings.Join(w.logs, "\n"))
		}
	})
	return w
}

// entityCalls is the line Migrate ends each entity with, and the portal requests it made.
var entityCalls = regexp.MustCompile(`msg="migration: entity verified" .*?entity=(\w+) calls_sent=(\d+)`)

// migrate runs `ingest bitrix migrate` once, as the command does (engine.Migrate with fresh
// clients of the portal and the target), and returns the portal requests it made. It logs them
// by entity, with the time it took.
func (w *deltaWorld) migrate(ctx context.Context, name string, with ...func(*engine.Config)) int64 {
	w.t.Helper()
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	src, err := rest.New(w.webhook, rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1), Logger: log})
	if err != nil {
		w.t.Fatal(err)
	}
	target, err := importapi.New(w.targetURL, importapi.Options{Logger: log})
	if err != nil {
		w.t.Fatal(err)
	}
	cfg := engine.Config{Registry: bitrix.Catalog(), Pool: w.pool, Source: src, Target: target, Log: log,
		Metrics: metrics.New(), Actor: "delta acceptance", Deletions: w.deletions}
	for _, f := range with {
		f(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	start := time.Now()
	err = e.Migrate(ctx, engine.MigrateOptions{})
	took := time.Since(start)
	w.logs = append(w.logs, "--- "+name+"\n"+buf.String())
	if err != nil {
		w.t.Fatalf("%s: bitrix migrate: %v", name, err)
	}
	var by []string
	for _, m := range entityCalls.FindAllStringSubmatch(buf.String(), -1) {
		by = append(by, m[1]+" "+m[2])
	}
	requests := src.Stats().Requests
	w.t.Logf("%s: %d portal requests in %s (by entity: %s)", name, requests, took.Round(time.Millisecond), strings.Join(by, ", "))
	return requests
}

// sent is the target's counts of what it was sent: its requests aside, which verify's reads add to.
func (w *deltaWorld) sent() targetfake.Stats {
	s := w.target.Stats()
	s.Requests = 0
	return s
}

// targetSnapshot is every record on the target, by key.
func (w *deltaWorld) targetSnapshot() map[string]targetfake.Record {
	out := map[string]targetfake.Record{}
	for _, name := range bitrix.Catalog().Names() {
		for _, r := range w.target.Records(name) {
			out[r.Key] = r
		}
	}
	return out
}

// state is every record's status and checksum, and the id map: what a pass that missed nothing
// leaves as it was.
func (w *deltaWorld) state() []string {
	return w.rows(`SELECT r.entity, r.source_id, r.status, r.checksum, coalesce(m.target_id, '') FROM bitrix_records r
LEFT JOIN bitrix_id_map m USING (entity, source_id) ORDER BY r.entity, r.source_id`)
}

// sameState requires the records' statuses and checksums, and the id map, to be what they were.
func (w *deltaWorld) sameState(t *testing.T, want []string, after string) {
	t.Helper()
	w.sameStateBut(t, want, after, "", nil)
}

// sameStateBut is sameState but for the records of entity with the portal ids except.
func (w *deltaWorld) sameStateBut(t *testing.T, want []string, after, entity string, except []string) {
	t.Helper()
	got := without(w.state(), entity, except)
	if len(got) != len(want) {
		t.Errorf("after %s the database holds %d records, before it %d", after, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("after %s record %s, before it %s", after, got[i], want[i])
			return
		}
	}
}

// rows returns a query's rows as text, one string a row.
func (w *deltaWorld) rows(q string, args ...any) []string {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), q, args...)
	if err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		vals, err := row.Values()
		return strings.TrimSuffix(fmt.Sprintln(vals...), "\n"), err
	})
	if err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
	return out
}

// status is a record's status, "" when the database has none.
func (w *deltaWorld) status(entity, sourceID string) string {
	got := w.rows(`SELECT status FROM bitrix_records WHERE entity = $1 AND source_id = $2`, entity, sourceID)
	if len(got) == 0 {
		return ""
	}
	return got[0]
}

// everyKind makes, besides the churn, one change of every kind the churn left out at this
// portal's size (an edit, an addition and a deletion of each record entity, a comment added and
// one deleted on a task and on a CRM record's timeline), on records the first migration imported
// and the churn did not touch, and adds them to its report.
func everyKind(t *testing.T, w *deltaWorld, p *bitrixfake.Portal, rep *bitrixfake.ChurnReport) {
	t.Helper()
	touched := map[string]bool{}
	for e, c := range rep.Changes {
		for _, id := range slices.Concat(c.Edited, c.Added, c.Deleted) {
			touched[e+" "+strconv.Itoa(id)] = true
			if o, ok := c.Owners[id]; ok {
				touched[o.Entity+" "+strconv.Itoa(o.ID)] = true
			}
		}
	}
	// untouched returns an imported record of the entity the churn did not touch, and marks it.
	untouched := func(entity, q string) int {
		t.Helper()
		for _, s := range w.rows(q) {
			id, err := strconv.Atoi(s)
			if err == nil && !touched[entity+" "+s] {
				touched[entity+" "+s] = true
				return id
			}
		}
		t.Fatalf("no %s the churn left alone: %s", entity, q)
		return 0
	}
	// imported are the entity's imported records, but those a workflow runs on: deleting one under
	// propagate leaves its running workflow and tasks naming a record gone from the target, and
	// workflows' verify reports them as differing (a limitation of propagate, not of delta passes).
	imported := func(entity string) string {
		return fmt.Sprintf(`SELECT source_id FROM bitrix_records r WHERE entity = '%s' AND status = 'IMPORT_OK'
AND NOT EXISTS (SELECT FROM bitrix_records w WHERE w.entity IN ('workflow_instances', 'workflow_tasks')
AND w.payload->>'DOCUMENT_ID' = upper(rtrim(r.entity, 's')) || '_' || r.source_id
OR w.entity IN ('workflow_instances', 'workflow_tasks') AND r.entity = 'companies' AND w.payload->>'DOCUMENT_ID' = 'COMPANY_' || r.source_id)
ORDER BY source_id::bigint`, entity)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []string{bitrixfake.DeleteCompanies, bitrixfake.DeleteContacts, bitrixfake.DeleteDeals, bitrixfake.DeleteTasks} {
		c := rep.Changes[e]
		// Tasks the migration sees, that no task names as its parent (a deletion would move its
		// subtasks, changes of records the report does not name) and in the old card (comments
		// read by task.commentitem.getlist).
		q := imported(e)
		if e == bitrixfake.DeleteTasks {
			q = `SELECT source_id FROM bitrix_records t WHERE entity = 'tasks' AND status = 'IMPORT_OK'
AND coalesce(payload->>'chatId', '0') IN ('0', '') AND NOT EXISTS (SELECT FROM bitrix_records s
WHERE s.entity = 'tasks' AND s.payload->>'parentId' = t.source_id) ORDER BY source_id::bigint`
		}
		if len(c.Edited) == 0 {
			id := untouched(e, q)
			must(p.Edit(e, id))
			c.Edited = append(c.Edited, id)
		}
		if len(c.Added) == 0 {
			id, err := p.Add(e)
			must(err)
			c.Added = append(c.Added, id)
		}
		if len(c.Deleted) == 0 {
			id := untouched(e, q)
			must(p.Delete(e, id))
			c.Deleted = append(c.Deleted, id)
		}
	}
	addComment := func(kind string, owner bitrixfake.Owner, id int) {
		c := rep.Changes[kind]
		if c.Owners == nil {
			c.Owners = map[int]bitrixfake.Owner{}
		}
		c.Owners[id] = owner
	}
	tc := rep.Changes[bitrixfake.DeleteTaskComments]
	if len(tc.Added) == 0 {
		task := untouched(bitrixfake.DeleteTasks, `SELECT source_id FROM bitrix_records WHERE entity = 'tasks' AND status = 'IMPORT_OK'
AND coalesce(payload->>'chatId', '0') IN ('0', '') ORDER BY source_id::bigint`)
		id, err := p.AddTaskComment(task)
		must(err)
		tc.Added = append(tc.Added, id)
		addComment(bitrixfake.DeleteTaskComments, bitrixfake.Owner{Entity: bitrixfake.DeleteTasks, ID: task}, id)
	}
	if len(tc.Deleted) == 0 {
		// An old-card comment: a deleted message of a task's chat is never detected, by any pass
		// (docs/bitrix-chats.md: the portal gives no tombstones).
		for _, s := range w.rows(`SELECT source_id FROM bitrix_records WHERE entity = 'task_comments' AND status = 'IMPORT_OK'
AND payload ? 'POST_DATE' ORDER BY source_id`) {
			task, comment, _ := strings.Cut(s, ":")
			taskID, _ := strconv.Atoi(task)
			id, err := strconv.Atoi(comment)
			if err != nil || touched["tasks "+task] {
				continue
			}
			touched["tasks "+task] = true
			must(p.DeleteTaskComment(id))
			tc.Deleted = append(tc.Deleted, id)
			addComment(bitrixfake.DeleteTaskComments, bitrixfake.Owner{Entity: bitrixfake.DeleteTasks, ID: taskID}, id)
			break
		}
	}
	cc := rep.Changes[bitrixfake.TimelineComments]
	if len(cc.Added) == 0 {
		deal := untouched(bitrixfake.DeleteDeals, imported(bitrixfake.DeleteDeals))
		id, err := p.AddTimelineComment(bitrixfake.DeleteDeals, deal)
		must(err)
		cc.Added = append(cc.Added, id)
		addComment(bitrixfake.TimelineComments, bitrixfake.Owner{Entity: bitrixfake.DeleteDeals, ID: deal}, id)
	}
	if len(cc.Deleted) == 0 {
		for _, s := range w.rows(`SELECT source_id || ' ' || (payload->>'ENTITY_TYPE') || ' ' || (payload->>'ENTITY_ID')
FROM bitrix_records WHERE entity = 'crm_comments' AND status = 'IMPORT_OK' ORDER BY source_id::bigint`) {
			f := strings.Fields(s)
			owner := map[string]string{"company": bitrixfake.DeleteCompanies, "contact": bitrixfake.DeleteContacts, "deal": bitrixfake.DeleteDeals}[strings.ToLower(f[1])]
			id, _ := strconv.Atoi(f[0])
			ownerID, _ := strconv.Atoi(f[2])
			if owner == "" || touched[owner+" "+f[2]] {
				continue
			}
			touched[owner+" "+f[2]] = true
			must(p.DeleteTimelineComment(id))
			cc.Deleted = append(cc.Deleted, id)
			addComment(bitrixfake.TimelineComments, bitrixfake.Owner{Entity: owner, ID: ownerID}, id)
			break
		}
	}
	for _, c := range rep.Changes {
		slices.Sort(c.Edited)
		slices.Sort(c.Added)
		slices.Sort(c.Deleted)
	}
}

// checkExactlyOnce requires the rerun to have sent every change once: the target created the
// records whose keys are new and updated the ones whose content changed, each once, resent
// nothing unchanged, refused nothing and holds no record twice.
func checkExactlyOnce(t *testing.T, w *deltaWorld, snap map[string]targetfake.Record, before targetfake.Stats) {
	t.Helper()
	now := w.targetSnapshot()
	var created, updated, removed int
	for k, r := range now {
		old, ok := snap[k]
		switch {
		case !ok:
			created++
		case !bytes.Equal(old.Payload, r.Payload):
			updated++
		}
	}
	for k := range snap {
		if _, ok := now[k]; !ok {
			removed++
		}
	}
	s := w.target.Stats()
	got := targetfake.Stats{Created: s.Created - before.Created, Updated: s.Updated - before.Updated,
		Unchanged: s.Unchanged - before.Unchanged, Failed: s.Failed - before.Failed, Duplicates: s.Duplicates,
		Deleted: s.Deleted + s.Cascaded - before.Deleted - before.Cascaded}
	want := targetfake.Stats{Created: created, Updated: updated, Deleted: removed}
	if got != want {
		t.Errorf("the rerun's target: %d created, %d updated, %d resent unchanged, %d removed, %d failed, %d duplicates; "+
			"want each new record created once (%d), each changed one updated once (%d), each removed once (%d), nothing else",
			got.Created, got.Updated, got.Unchanged, got.Deleted, got.Failed, got.Duplicates, created, updated, removed)
	}
	t.Logf("the rerun's target: %d created, %d updated, %d removed", created, updated, removed)
}

// checkChurn requires every change the report names on the target after the rerun: an edited
// record with content other than before, an added one imported, a deleted one marked deleted
// (and, under propagate, removed from the target; under keep, left there as it was).
//
// A timeline comment deleted on a record nothing else changed moves nothing the portal lists
// (docs/bitrix-delta.md): no delta pass sees it, the next full pass concludes it. checkChurn
// returns those comments' portal ids, for the full pass to conclude.
func checkChurn(t *testing.T, w *deltaWorld, rep bitrixfake.ChurnReport, snap map[string]targetfake.Record) (alone []string) {
	t.Helper()
	// touched reports whether the churn changed the record a timeline comment belongs to in a way
	// the portal lists: an edit of it, a comment added to it.
	touched := func(o bitrixfake.Owner) bool {
		if c := rep.Changes[o.Entity]; c != nil && slices.Contains(c.Edited, o.ID) {
			return true
		}
		tc := rep.Changes[bitrixfake.TimelineComments]
		for _, id := range tc.Added {
			if tc.Owners[id] == o {
				return true
			}
		}
		return false
	}
	// source names the migration's record of a reported change.
	source := func(kind string, c *bitrixfake.Changes, id int) (entity, sourceID string) {
		switch kind {
		case bitrixfake.DeleteTaskComments:
			return bitrix.TaskComments, strconv.Itoa(c.Owners[id].ID) + ":" + strconv.Itoa(id)
		case bitrixfake.TimelineComments:
			return bitrix.CRMComments, strconv.Itoa(id)
		}
		return kind, strconv.Itoa(id)
	}
	gone := string(engine.DeletedAtSource)
	if w.deletions == engine.DeletionsPropagate {
		gone = string(engine.DeletedOnTarget)
	}
	for kind, c := range rep.Changes {
		for _, id := range c.Edited {
			entity, sid := source(kind, c, id)
			key := "source:" + entity + ":" + sid
			r, ok := w.target.Lookup(entity, key)
			if st := w.status(entity, sid); st != "IMPORT_OK" || !ok || bytes.Equal(r.Payload, snap[key].Payload) {
				t.Errorf("edited %s %s: status %q, on the target %v, content unchanged %v; want IMPORT_OK with the new content",
					entity, sid, st, ok, ok && bytes.Equal(r.Payload, snap[key].Payload))
			}
		}
		for _, id := range c.Added {
			entity, sid := source(kind, c, id)
			key := "source:" + entity + ":" + sid
			_, ok := w.target.Lookup(entity, key)
			if st := w.status(entity, sid); st != "IMPORT_OK" || !ok {
				t.Errorf("added %s %s: status %q, on the target %v; want IMPORT_OK, on the target", entity, sid, st, ok)
			}
		}
		for _, id := range c.Deleted {
			entity, sid := source(kind, c, id)
			if entity == bitrix.TaskComments && len(w.rows(`SELECT FROM bitrix_records WHERE entity = $1 AND source_id = $2
AND NOT payload ? 'POST_DATE'`, entity, sid)) > 0 {
				// A message of the task's chat: no pass detects its deletion (docs/bitrix-chats.md),
				// so it stays as a full pass leaves it, which the full pass at the end checks.
				t.Logf("deleted %s %s is a message of the task's chat: not detected, as documented", entity, sid)
				continue
			}
			if kind == bitrixfake.TimelineComments && !touched(c.Owners[id]) {
				t.Logf("deleted %s %s alone on its record: left to the next full pass, as documented", entity, sid)
				alone = append(alone, sid)
				continue
			}
			key := "source:" + entity + ":" + sid
			r, ok := w.target.Lookup(entity, key)
			kept := ok && bytes.Equal(r.Payload, snap[key].Payload)
			if st := w.status(entity, sid); st != gone || (w.deletions == engine.DeletionsPropagate) == ok || (ok && !kept) {
				t.Errorf("deleted %s %s: status %q, on the target %v (as before: %v); want %s, %s", entity, sid, st, ok, kept, gone,
					map[bool]string{true: "removed from the target", false: "left on the target as it was"}[w.deletions == engine.DeletionsPropagate])
			}
		}
	}
	return alone
}

// without drops from a state (w.state) the rows of the entity's records with the portal ids.
func without(state []string, entity string, ids []string) []string {
	var out []string
	for _, row := range state {
		f := strings.Fields(row)
		if len(f) >= 2 && f[0] == entity && slices.Contains(ids, f[1]) {
			continue
		}
		out = append(out, row)
	}
	return out
}
