package bitrix_test

import (
	"strconv"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

const (
	taskListMethod    = "tasks.task.list"
	taskCommentMethod = "task.commentitem.getlist"
	taskChecklistCall = "task.checklistitem.getlist"
)

// TestDeltaFindsATaskCommentDeletedAlone: a comment deleted on the portal moves no date of its
// task, only its commentsCount; after a full pass of tasks with comments, a delta pass lists every
// task's count, reads again exactly the task whose count dropped (its comments and checklist),
// and concludes the comment deleted. With nothing changed, the delta sends the count listing and
// reads no task's children. A comment added (which moves only activityDate, unfiltered) is found
// the same way.
func TestDeltaFindsATaskCommentDeletedAlone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		delete bool
		add    bool
	}{{name: "comment deleted", delete: true}, {name: "comment added", add: true}, {name: "nothing changed"}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := crmOptions(67)
			opts.Tasks, opts.TaskComments = 70, 4
			v := newEnv(t, opts)
			e := v.engine()
			for _, ent := range []string{bitrix.Users, bitrix.Groups, bitrix.Tasks} {
				v.phases(e, ent, "get")
			}
			var task bitrixfake.TaskInfo
			for _, ti := range v.portal.TaskInfos() {
				if !ti.Hidden && !ti.Chat && ti.Comments >= 2 {
					task = ti
					break
				}
			}
			if task.ID == 0 {
				t.Fatal("the portal has no old-card task with two comments")
			}
			id := strconv.Itoa(task.ID)
			comment := id + ":" + strconv.Itoa(task.ID*64+1)
			if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'task_comments' AND source_id = $1 AND status = 'NEW'`, comment); n != 1 {
				t.Fatalf("comment %s was not read by the full pass", comment)
			}
			if tt.delete {
				if err := v.portal.DeleteTaskComment(task.ID*64 + 1); err != nil {
					t.Fatal(err)
				}
			}
			added := ""
			if tt.add {
				c, err := v.portal.AddTaskComment(task.ID)
				if err != nil {
					t.Fatal(err)
				}
				added = id + ":" + strconv.Itoa(c)
			}
			before := v.portal.Stats()
			st, err := v.engine().Get(v.ctx, bitrix.Tasks)
			if err != nil {
				t.Fatal(err)
			}
			after := v.portal.Stats()
			calls := func(m string) int { return after.Calls[m] - before.Calls[m] }
			// The bounds, the >CHANGED_DATE scan, the new-card tasks' chats topped up, the count
			// listing; and, for a comment deleted, its task by id, its checklist, its comments.
			want := 4
			if tt.delete || tt.add {
				want = 7
			}
			if got := after.Requests - before.Requests; got != want {
				t.Errorf("the delta sent %d requests (%d %s commands), want %d", got, calls(taskListMethod), taskListMethod, want)
			}
			if inv := v.inventoryRow(bitrix.Tasks); inv.Kind != "delta" || !inv.Complete {
				t.Fatalf("tasks: pass %s complete=%v (%s), want a complete delta", inv.Kind, inv.Complete, deref(inv.Reason))
			}
			var status, code string
			if err := v.pool.QueryRow(v.ctx, `SELECT status, coalesce(reason_code, '') FROM bitrix_records
WHERE entity = 'task_comments' AND source_id = $1`, comment).Scan(&status, &code); err != nil {
				t.Fatal(err)
			}
			deleted := v.count(`SELECT count(*) FROM bitrix_records WHERE status = 'DELETED_AT_SOURCE'`)
			if !tt.delete && !tt.add {
				if calls(taskCommentMethod) != 0 || calls(taskChecklistCall) != 0 {
					t.Errorf("nothing changed, yet the delta read %d comment lists and %d checklists",
						calls(taskCommentMethod), calls(taskChecklistCall))
				}
				if status != "NEW" || deleted != 0 || st.Of(bitrix.Tasks).Rows != 0 {
					t.Errorf("nothing changed: comment %s %s, %d records deleted, %d tasks read", comment, status, deleted, st.Of(bitrix.Tasks).Rows)
				}
				return
			}
			if calls(taskCommentMethod) != 1 || calls(taskChecklistCall) != 1 {
				t.Errorf("the delta read %d comment lists and %d checklists, want task %s's alone",
					calls(taskCommentMethod), calls(taskChecklistCall), id)
			}
			if c := st.Of(bitrix.Tasks); c.Rows != 1 {
				t.Errorf("the delta read %d tasks, want task %s alone", c.Rows, id)
			}
			if tt.add {
				// A comment added moves activityDate, which no filter of the delta reads: the
				// count found it.
				if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'task_comments' AND source_id = $1
AND status = 'NEW'`, added); n != 1 || deleted != 0 {
					t.Errorf("the comment %s added on the portal was not stored (%d), %d records deleted", added, n, deleted)
				}
				return
			}
			if status != "DELETED_AT_SOURCE" || code != "deleted_at_source" || deleted != 1 {
				t.Errorf("comment %s deleted on the portal: %s (%s), %d records deleted; want it alone DELETED_AT_SOURCE",
					comment, status, code, deleted)
			}
			if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'task_comments' AND parent_source_id = $1
AND status = 'NEW'`, id); n != task.Comments-1 {
				t.Errorf("task %s keeps %d live comments, want %d", id, n, task.Comments-1)
			}
		})
	}
}
