package bitrix_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

func TestTaskCustomFields(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 60, Seed: 33})
	e := v.engine()
	v.migrateBase(e)
	v.phases(e, bitrix.Tasks, "fields-get", "get")
	// Before fields-set, a value of a field the target can hold but does not have yet fails
	// the task with what to run, instead of being dropped.
	if _, err := e.Set(v.ctx, bitrix.Tasks); err != nil {
		t.Fatal(err)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'tasks' AND last_error LIKE '%fields-set%'`); n == 0 {
		t.Error("no task failed for want of fields-set")
	}
	st, err := e.FieldsSet(v.ctx, bitrix.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	// string, double, datetime and boolean are created; the three system fields exist
	// already; the integer field cannot be created.
	if st.Created != 4 || st.Existing != 3 || st.Skipped != 1 {
		t.Errorf("fields-set %+v, want 4 created, 3 existing (system), 1 skipped", st)
	}
	var names []string
	for _, f := range v.target.Fields(bitrix.Tasks) {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	if want := []string{"UF_TASK_APPROVAL_DEADLINE", "UF_TASK_CLIENT_REQUEST", "UF_TASK_LEGAL_REVIEW_REQUIRED", "UF_TASK_PROJECT_BUDGET"}; !slices.Equal(names, want) {
		t.Errorf("fields on the target %v, want %v", names, want)
	}
	if _, err := v.pool.Exec(v.ctx, `UPDATE bitrix_records SET status = 'NEW' WHERE entity = 'tasks' AND status = 'IMPORT_ERR'
AND last_error LIKE '%fields-set%'`); err != nil {
		t.Fatal(err)
	}
	v.phases(e, bitrix.Tasks, "set")
	withValue := 0
	for _, r := range v.target.Records(bitrix.Tasks) {
		p := payloadOf(t, r.Payload)
		if _, ok := p["UF_TASK_STORY_POINTS"]; ok {
			t.Errorf("%s carries the integer field the target cannot hold", r.Key)
		}
		if _, ok := p["ufCrmTask"]; ok {
			t.Errorf("%s carries ufCrmTask, want UF_CRM_TASK", r.Key)
		}
		if _, ok := p["UF_CRM_TASK"]; !ok {
			t.Errorf("%s lacks UF_CRM_TASK", r.Key)
		}
		if p["UF_TASK_CLIENT_REQUEST"] != nil {
			withValue++
		}
	}
	if withValue == 0 {
		t.Error("no task carries UF_TASK_CLIENT_REQUEST")
	}
	rep, err := e.Verify(v.ctx, bitrix.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Notes, " "), "UF_TASK_STORY_POINTS (integer)") {
		t.Errorf("verify notes %q do not name the field not migrated", rep.Notes)
	}
}

func TestTaskChatFromTaskGet(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 80, TaskListWithoutChat: true, Seed: 34})
	e := v.engine()
	v.migrateBase(e)
	v.phases(e, bitrix.Tasks, "fields-get", "fields-set", "get")
	if n := v.portal.Stats().Calls["tasks.task.get"]; n != len(visibleTasks(v.portal)) {
		t.Errorf("tasks.task.get ran %d times, want once per task listed without chatId (%d)", n, len(visibleTasks(v.portal)))
	}
	chats := 0
	for _, ti := range visibleTasks(v.portal) {
		if ti.Chat && !ti.ChatRefused && ti.Comments > 0 {
			chats++
		}
	}
	got := v.count(`SELECT count(DISTINCT parent_source_id) FROM bitrix_records WHERE entity = 'task_comments' AND payload ? 'chat_id'`)
	if chats == 0 || got != chats {
		t.Errorf("chat comments read for %d tasks, want %d", got, chats)
	}
}

func visibleTasks(p *bitrixfake.Portal) []bitrixfake.TaskInfo {
	var out []bitrixfake.TaskInfo
	for _, ti := range p.TaskInfos() {
		if !ti.Hidden {
			out = append(out, ti)
		}
	}
	return out
}

func TestTaskParentCycle(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 40, Seed: 35})
	ids := visibleTasks(v.portal)
	a, b := ids[3].ID, ids[7].ID
	v.portal.SetTaskField(a, "parentId", strconv.Itoa(b))
	v.portal.SetTaskField(b, "parentId", strconv.Itoa(a))
	e := v.engine()
	v.migrateBase(e)
	v.phases(e, bitrix.Tasks, "fields-get", "fields-set", "get", "set")
	for _, id := range []int{a, b} {
		r := v.record(bitrix.Tasks, strconv.Itoa(id))
		if r.Status != engine.ImportErr || !strings.Contains(r.LastError, "cycle") {
			t.Errorf("task %d in a cycle of parents: %s %q", id, r.Status, r.LastError)
		}
	}
	// A later get finds the tasks fixed on the portal; they go back to NEW and through.
	v.portal.SetTaskField(a, "parentId", nil)
	if err := v.portal.Edit(bitrixfake.DeleteTasks, a); err != nil { // as the fix moves CHANGED_DATE on the portal
		t.Fatal(err)
	}
	v.phases(e, bitrix.Tasks, "get", "set")
	for _, id := range []int{a, b} {
		if r := v.record(bitrix.Tasks, strconv.Itoa(id)); r.Status != engine.ImportOK {
			t.Errorf("task %d after the fix: %s %q", id, r.Status, r.LastError)
		}
	}
	rec, _ := v.target.Lookup(bitrix.Tasks, "source:tasks:"+strconv.Itoa(b))
	parent, _ := v.target.Lookup(bitrix.Tasks, "source:tasks:"+strconv.Itoa(a))
	if payloadOf(t, rec.Payload)["parentId"] != parent.TargetID {
		t.Errorf("task %d's parent on the target is %v, want %s", b, payloadOf(t, rec.Payload)["parentId"], parent.TargetID)
	}
}

// TestFeedAndTasksGetAgainChangesNothing: a nightly get of an unchanged portal stores nothing
// new or changed, so set sends nothing again.
func TestFeedAndTasksGetAgainChangesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 40, Groups: 5, Posts: 60, Tasks: 80, Seed: 36})
	e := v.engine()
	v.migrateBase(e)
	for _, ent := range []string{bitrix.Feed, bitrix.Tasks} {
		_ = e.Run(v.ctx, ent) // tasks may fail verify for subtasks of hidden tasks
		before := v.target.Stats()
		st, err := e.Get(v.ctx, ent)
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range st.Counts {
			if c.Inserted+c.Changed > 0 {
				t.Errorf("%s get again: %s %d new, %d changed", ent, name, c.Inserted, c.Changed)
			}
		}
		if _, err := e.Set(v.ctx, ent); err != nil {
			t.Fatal(err)
		}
		if after := v.target.Stats(); after.Items != before.Items {
			t.Errorf("%s set again sent %d items", ent, after.Items-before.Items)
		}
	}
}

func TestFeedCommentsOfAnOrdinaryWebhook(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 30, Groups: 4, Posts: 40, NotAdmin: true, Seed: 37})
	e := v.engine()
	v.migrateBase(e)
	v.phases(e, bitrix.Feed, "get")
	if n := v.count(`SELECT count(DISTINCT payload->>'author_id') FROM bitrix_records WHERE entity = 'feed_comments'`); n > 1 {
		t.Errorf("comments of %d authors read; an ordinary user's webhook can only read its own", n)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'feed_comments' AND payload->>'author_id' <> '1'`); n != 0 {
		t.Errorf("%d comments attributed to someone else than the webhook's user", n)
	}
}

// TestFeedAndTasksVerifyNamesEveryRecord: a record corrupted, deleted or added on the target is
// named by verify, for every entity of the feed and of tasks.
func TestFeedAndTasksVerifyNamesEveryRecord(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 40, Groups: 5, Posts: 60, Tasks: 80, Seed: 38})
	e := v.engine()
	v.migrateBase(e)
	for _, fam := range [][]string{{bitrix.Feed, bitrix.FeedRecipients, bitrix.FeedComments},
		{bitrix.Tasks, bitrix.TaskChecklists, bitrix.TaskComments}} {
		_ = e.Run(v.ctx, fam[0])
		for _, ent := range fam {
			recs := v.target.Records(ent)
			if len(recs) < 3 {
				t.Fatalf("%s: %d records on the target", ent, len(recs))
			}
			var field string
			for k := range payloadOf(t, recs[0].Payload) {
				field = k
				break
			}
			if err := v.target.Corrupt(ent, recs[0].Key, field, "corrupted"); err != nil {
				t.Fatal(err)
			}
			v.target.Delete(ent, recs[1].Key)
			v.target.Put(ent, "source:"+ent+":999999999", json.RawMessage(`{"x":1}`))
			rep, err := e.Verify(v.ctx, fam[0])
			if err != nil {
				t.Fatal(err)
			}
			found := func(list []engine.RecordIssue, key string) bool {
				return slices.ContainsFunc(list, func(i engine.RecordIssue) bool { return "source:"+i.Entity+":"+i.SourceID == key })
			}
			if !slices.ContainsFunc(rep.Differing, func(m engine.Mismatch) bool {
				return "source:"+m.Entity+":"+m.SourceID == recs[0].Key && m.Field == field
			}) {
				t.Errorf("%s: verify does not name the corrupted %s field %s", ent, recs[0].Key, field)
			}
			if !found(rep.Missing, recs[1].Key) {
				t.Errorf("%s: verify does not name the deleted %s", ent, recs[1].Key)
			}
			if !found(rep.Extra, "source:"+ent+":999999999") {
				t.Errorf("%s: verify does not name the added record", ent)
			}
			if rep.Clean() {
				t.Errorf("%s: verify clean after the damage", ent)
			}
		}
	}
}

func TestTasksUnderTestLimit(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 40, Groups: 5, Tasks: 200, Seed: 39})
	e := v.engine()
	v.migrateBase(e)
	e = v.engine(func(c *engine.Config) { c.TestLimit = 20 })
	st, err := e.Get(v.ctx, bitrix.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	// The limited tasks' parents come along beyond the limit, so their links can be kept.
	if c := st.Of(bitrix.Tasks); c.Rows < 20 {
		t.Errorf("read %d tasks, want at least 20", c.Rows)
	}
	n := v.count(`SELECT count(*) FROM bitrix_records c WHERE c.entity = 'tasks' AND c.parent_source_id IS NOT NULL
AND NOT EXISTS (SELECT 1 FROM bitrix_records p WHERE p.entity = 'tasks' AND p.source_id = c.parent_source_id)`)
	hidden := 0
	for _, ti := range v.portal.TaskInfos() {
		if ti.Hidden {
			hidden++
		}
	}
	if n > hidden {
		t.Errorf("%d limited tasks lack their parent", n)
	}
}
