package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// taskFixture is an engine over a fresh database and a fake portal's tasks, read as the catalog
// reads them (internal/bitrix/entity_tasks.go, get only): an ID scan of tasks.task.list, with
// each page's checklists (one record per task) and old-card comments fetched per task.
type taskFixture struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool
	portal *bitrixfake.Portal
	e      *Engine
	tasks  *Entity
}

const (
	checklistMethod = "task.checklistitem.getlist"
	commentMethod   = "task.commentitem.getlist"
)

func newTaskFixture(t *testing.T, opts bitrixfake.Options) *taskFixture {
	t.Helper()
	tasks := &Entity{Name: "tasks", Lister: &IDScan{Scan: rest.Scan{Method: "tasks.task.list",
		Params:      map[string]any{"select": []string{"ID", "TITLE", "CREATED_BY", "CHANGED_DATE", "ACTIVITY_DATE", "CHAT_ID"}},
		FilterParam: "filter", IDField: "id", FilterField: "ID", RowsPath: []string{"tasks"},
		Order: map[string]any{"order": map[string]any{"ID": "asc"}}}},
		Volatile: []string{"activityDate"}, Batch: 50}
	checklists := &Entity{Name: "task_checklists", Parent: "tasks", Batch: 50,
		Fetch: &ChildFetch{Method: checklistMethod, ParentParam: "TASKID", KeyField: "ID", Whole: true}}
	comments := &Entity{Name: "task_comments", Parent: "tasks", Batch: 50,
		Fetch: &ChildFetch{Method: commentMethod, KeyField: "ID",
			Params: func(task string) any { return []any{task, map[string]string{"ID": "asc"}} },
			When:   func(task map[string]json.RawMessage) bool { return None(Text(task, "chatId")) }}}
	reg, err := NewRegistry(tasks, checklists, comments)
	if err != nil {
		t.Fatal(err)
	}
	portal := bitrixfake.New(opts)
	srv := httptest.NewServer(portal)
	t.Cleanup(srv.Close)
	src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1)})
	if err != nil {
		t.Fatal(err)
	}
	pool := dbtest.Pool(t)
	e := build(Config{Registry: reg, Pool: pool, Source: src, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: metrics.New(), Actor: "test"})
	return &taskFixture{t: t, ctx: context.Background(), pool: pool, portal: portal, e: e, tasks: tasks}
}

// calls returns how many commands of each child method the portal has run.
func (f *taskFixture) calls() (checklists, comments int) {
	c := f.portal.Stats().Calls
	return c[checklistMethod], c[commentMethod]
}

func (f *taskFixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// deltaPage is what a delta pass's scan brings to the store path (rangeWalk.store) until the
// delta listers land: a new pass of the tasks marked delta, and one of its walks (reading with
// how) storing the page of tasks the portal lists with filter over the IDs after lo up to hi.
func (f *taskFixture) deltaPage(how childReads, filter map[string]any, lo, hi string) GetStats {
	f.t.Helper()
	s := *f.tasks.Lister.(*IDScan)
	s.Scan.Params = map[string]any{"select": s.Scan.Params["select"], "filter": filter}
	st := GetStats{}
	since := time.Now().Add(-time.Hour)
	g := &GetRun{Env: f.e.env(), Ent: f.tasks, Stats: &st, Start: time.Now(),
		Pass: PassDecision{Kind: PassDelta, Since: since, Reason: "test"}}
	r := &idRange{lo: lo, hi: hi, cursor: lo}
	var inv Inventory
	err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) (err error) {
		if inv, err = NewStore(tx).startPass(f.ctx, "tasks", 0); err != nil {
			return err
		}
		if err := NewStore(tx).markPass(f.ctx, "tasks", g.Pass, time.Now(), "fp"); err != nil {
			return err
		}
		return NewStore(tx).saveRanges(f.ctx, "tasks", inv.Pass, []*idRange{r})
	})
	if err != nil {
		f.t.Fatal(err)
	}
	w := &rangeWalk{g: g, scan: &s, pass: inv.Pass, zone: time.UTC, children: how, ranges: []*idRange{r}}
	pages, err := f.e.source.ScanSegments(f.ctx, s.Scan, []rest.Segment{{After: lo, UpTo: hi, Pages: rest.MaxBatch}})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := w.store(f.ctx, []*idRange{r}, pages); err != nil {
		f.t.Fatal(err)
	}
	return st
}

// oldCard returns the visible tasks without a chat that have at least two comments and a
// checklist, and those with a chat.
func (f *taskFixture) oldCard() (old, chat []bitrixfake.TaskInfo) {
	for _, ti := range f.portal.TaskInfos() {
		switch {
		case ti.Hidden:
		case ti.Chat:
			chat = append(chat, ti)
		case ti.Comments >= 2 && ti.Checklist > 0:
			old = append(old, ti)
		}
	}
	if len(old) < 3 || len(chat) == 0 {
		f.t.Fatalf("the portal has %d old-card tasks with comments and a checklist, %d with a chat: the test needs more", len(old), len(chat))
	}
	return old, chat
}

// TestDeltaRereadsChildrenOfReturnedTasksOnly: after a full pass of tasks, a delta whose filtered
// scan returns one task reads that task's checklist and comments again, and nobody else's; the
// comment deleted from it on the portal is concluded deleted at once, with reason code
// deleted_at_source, and the children of every other task are left as they were.
func TestDeltaRereadsChildrenOfReturnedTasksOnly(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 60, TaskComments: 4, Seed: 71})
	if _, err := f.e.get(f.ctx, f.tasks); err != nil {
		t.Fatal(err)
	}
	old, _ := f.oldCard()
	lists, comments := f.calls()
	visible := f.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'tasks'`)
	if lists != visible {
		t.Fatalf("the full pass asked for %d checklists of %d tasks", lists, visible)
	}
	// The full pass concludes nothing per parent, as before delta passes.
	if n := f.count(`SELECT count(*) FROM bitrix_records WHERE reason_code = $1`, CodeDeletedAtSource); n != 0 {
		t.Fatalf("the full pass concluded %d records deleted", n)
	}
	task := old[1]
	id := strconv.Itoa(task.ID)
	gone := id + ":" + strconv.Itoa(task.ID*64+1)
	if f.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'task_comments' AND source_id = $1`, gone) != 1 {
		t.Fatalf("comment %s was not read by the full pass", gone)
	}
	if err := f.portal.Delete(bitrixfake.DeleteTaskComments, task.ID*64+1); err != nil {
		t.Fatal(err)
	}
	// The other tasks' children as the full pass left them.
	others := `SELECT count(*) FROM bitrix_records WHERE entity IN ('task_comments', 'task_checklists')
AND parent_source_id <> $1 AND fetched_at < $2 AND status = 'NEW'`
	mark := time.Now()
	before := f.count(others, id, mark)
	if before == 0 {
		t.Fatal("no children of other tasks to watch")
	}

	st := f.deltaPage(childrenByPass, map[string]any{"ID": id}, "0", "")

	l2, c2 := f.calls()
	if l2-lists != 1 || c2-comments != 1 {
		t.Errorf("the delta asked for %d checklists and %d comment lists, want one each (task %s's)", l2-lists, c2-comments, id)
	}
	var st2, code string
	err := f.pool.QueryRow(f.ctx, `SELECT status, coalesce(reason_code, '') FROM bitrix_records
WHERE entity = 'task_comments' AND source_id = $1`, gone).Scan(&st2, &code)
	if err != nil {
		t.Fatal(err)
	}
	if st2 != string(DeletedAtSource) || code != CodeDeletedAtSource {
		t.Errorf("comment %s deleted on the portal: %s (%s), want %s (%s)", gone, st2, code, DeletedAtSource, CodeDeletedAtSource)
	}
	if st.Deleted != 1 {
		t.Errorf("the delta counted %d records deleted, want 1", st.Deleted)
	}
	if n := f.count(`SELECT count(*) FROM bitrix_records WHERE entity IN ('task_comments', 'task_checklists')
AND parent_source_id = $1 AND status = 'NEW'`, id); n != task.Comments-1+1 {
		t.Errorf("task %s keeps %d live children, want its %d comments left and its checklist", id, n, task.Comments-1)
	}
	if after := f.count(others, id, mark); after != before {
		t.Errorf("the delta touched the children of other tasks: %d of %d left as they were", after, before)
	}
}

// TestRelistingRereadsChildrenOfChangedTasksOnly: the rows of a delta's re-listed range
// (childrenOfChanged) bring the children of the tasks that changed only; a task the fetch does not
// ask (When: a task with a chat) concludes nothing of its children.
func TestRelistingRereadsChildrenOfChangedTasksOnly(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 60, TaskComments: 4, Seed: 72})
	if _, err := f.e.get(f.ctx, f.tasks); err != nil {
		t.Fatal(err)
	}
	old, chat := f.oldCard()
	changed := old[0]
	f.portal.SetTaskField(changed.ID, "title", "renamed on the portal")
	f.portal.SetTaskField(chat[0].ID, "title", "renamed on the portal too")
	if err := f.portal.Delete(bitrixfake.DeleteTaskComments, changed.ID*64); err != nil {
		t.Fatal(err)
	}
	unchanged := old[1]
	if err := f.portal.Delete(bitrixfake.DeleteTaskComments, unchanged.ID*64); err != nil {
		t.Fatal(err)
	}
	// A comment kept for a chat task by another read (the chats' walk): never concluded by a
	// fetch that does not ask for the task's comments.
	walked := strconv.Itoa(chat[0].ID) + ":walked"
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO bitrix_records (entity, source_id, parent_source_id, payload, checksum)
VALUES ('task_comments', $1, $2, '{}', 'x')`, walked, strconv.Itoa(chat[0].ID)); err != nil {
		t.Fatal(err)
	}
	lists, comments := f.calls()

	ids := []int{changed.ID, unchanged.ID, chat[0].ID}
	st := f.deltaPage(childrenOfChanged, map[string]any{}, "0", strconv.Itoa(slices.Max(ids)))

	l2, c2 := f.calls()
	if l2-lists != 2 || c2-comments != 1 {
		t.Errorf("the re-listing asked for %d checklists and %d comment lists, want the two changed tasks' checklists "+
			"and task %d's comments (task %d has a chat)", l2-lists, c2-comments, changed.ID, chat[0].ID)
	}
	status := func(sourceID string) string {
		var s string
		if err := f.pool.QueryRow(f.ctx, `SELECT status FROM bitrix_records WHERE entity = 'task_comments' AND source_id = $1`,
			sourceID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := status(strconv.Itoa(changed.ID) + ":" + strconv.Itoa(changed.ID*64)); s != string(DeletedAtSource) {
		t.Errorf("the changed task's deleted comment is %s, want %s", s, DeletedAtSource)
	}
	if s := status(strconv.Itoa(unchanged.ID) + ":" + strconv.Itoa(unchanged.ID*64)); s != "NEW" {
		t.Errorf("the unchanged task's comment is %s: its comments were not read again, so nothing is concluded", s)
	}
	if s := status(walked); s != "NEW" {
		t.Errorf("a chat task's comment is %s: its comments are not fetched, so nothing is concluded", s)
	}
	if st.Deleted != 1 {
		t.Errorf("the re-listing counted %d records deleted, want 1", st.Deleted)
	}
}

// TestDeltaConcludesAnEmptiedWholeChecklist: a Whole fetch (one record per task) that returns no
// item for a task read again concludes the task's stored checklist deleted, while the task's
// comments, returned, stay.
func TestDeltaConcludesAnEmptiedWholeChecklist(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 60, TaskComments: 4, Seed: 73})
	if _, err := f.e.get(f.ctx, f.tasks); err != nil {
		t.Fatal(err)
	}
	var bare bitrixfake.TaskInfo
	for _, ti := range f.portal.TaskInfos() {
		if !ti.Hidden && !ti.Chat && ti.Checklist == 0 && ti.Comments > 0 {
			bare = ti
			break
		}
	}
	if bare.ID == 0 {
		t.Fatal("no visible old-card task without a checklist")
	}
	id := strconv.Itoa(bare.ID)
	// The checklist the task had when it was read before (its items since removed on the portal).
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO bitrix_records (entity, source_id, parent_source_id, payload, checksum)
VALUES ('task_checklists', $1, $1, '{"items": [{"ID": "1"}]}', 'x')`, id); err != nil {
		t.Fatal(err)
	}
	st := f.deltaPage(childrenByPass, map[string]any{"ID": id}, "0", "")
	var status string
	if err := f.pool.QueryRow(f.ctx, `SELECT status FROM bitrix_records WHERE entity = 'task_checklists' AND source_id = $1`, id).
		Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != string(DeletedAtSource) {
		t.Errorf("the checklist emptied on the portal is %s, want %s", status, DeletedAtSource)
	}
	if n := f.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'task_comments' AND parent_source_id = $1
AND status = 'DELETED_AT_SOURCE'`, id); n != 0 || st.Deleted != 1 {
		t.Errorf("%d of the task's comments concluded deleted, %d records in all; want none and the checklist", n, st.Deleted)
	}
}

// TestActivityFilterRereadsCommentsOfAnUnchangedTask: a comment added on the portal moves only the
// task's activity date, which is Volatile: the activity filter's scan returns the task with the
// checksum it had, and its comments are read all the same, the new one stored.
func TestActivityFilterRereadsCommentsOfAnUnchangedTask(t *testing.T) {
	t.Parallel()
	f := newTaskFixture(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 60, TaskComments: 4, Seed: 74})
	if _, err := f.e.get(f.ctx, f.tasks); err != nil {
		t.Fatal(err)
	}
	old, _ := f.oldCard()
	task := old[2]
	since := time.Now().Add(-time.Second)
	comment, err := f.portal.AddTaskComment(task.ID)
	if err != nil {
		t.Fatal(err)
	}
	lists, comments := f.calls()
	st := f.deltaPage(childrenByPass, map[string]any{">ACTIVITY_DATE": since.Format(time.RFC3339)}, "0", "")
	if c := st.Of("tasks"); c.Rows != 1 || c.Unchanged != 1 {
		t.Fatalf("the activity filter brought %+v; want task %d alone, unchanged", c, task.ID)
	}
	if l2, c2 := f.calls(); l2-lists != 1 || c2-comments != 1 {
		t.Errorf("the delta asked for %d checklists and %d comment lists, want one each", l2-lists, c2-comments)
	}
	if n := f.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'task_comments' AND source_id = $1 AND status = 'NEW'`,
		strconv.Itoa(task.ID)+":"+strconv.Itoa(comment)); n != 1 {
		t.Errorf("the comment added to task %d was not stored", task.ID)
	}
}
