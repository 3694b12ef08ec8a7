package bitrix_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
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
			// The count read again is stored (it is Volatile: the task itself is unchanged), so
			// the next delta finds nothing moved.
			next := v.portal.Stats().Calls[taskCommentMethod]
			if _, err := v.engine().Get(v.ctx, bitrix.Tasks); err != nil {
				t.Fatal(err)
			}
			if got := v.portal.Stats().Calls[taskCommentMethod] - next; got != 0 {
				t.Errorf("the delta after it read %d comment lists again, want none", got)
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

// killOnMethod cancels the get's context when a batch carries a command of method: a kill in the
// middle of a step.
type killOnMethod struct {
	engine.Source
	method string
	cancel context.CancelFunc
}

func (k *killOnMethod) Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error) {
	for _, c := range cmds {
		if c.Method == k.method {
			k.cancel()
			return nil, context.Cause(ctx)
		}
	}
	return k.Source.Batch(ctx, cmds, halt)
}

// TestDeltaChildCountsResume: a delta pass killed while it reads again a task whose comment count
// moved (its comments' call) resumes as the same delta, lists the counts again, reads that task
// once more (nothing of it was stored) and concludes the comment deleted; a third get, with
// nothing changed, reads no task's children.
func TestDeltaChildCountsResume(t *testing.T) {
	t.Parallel()
	opts := crmOptions(68)
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
	comment := strconv.Itoa(task.ID) + ":" + strconv.Itoa(task.ID*64+1)
	if err := v.portal.DeleteTaskComment(task.ID*64 + 1); err != nil {
		t.Fatal(err)
	}
	pass := v.inventoryRow(bitrix.Tasks).Pass
	ctx, cancel := context.WithCancel(v.ctx)
	defer cancel()
	kill := func(c *engine.Config) {
		c.Source = &killOnMethod{Source: v.source, method: taskCommentMethod, cancel: cancel}
	}
	if _, err := v.engine(kill).Get(ctx, bitrix.Tasks); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	if inv := v.inventoryRow(bitrix.Tasks); inv.Complete || inv.Kind != engine.PassDelta || inv.Pass != pass+1 {
		t.Fatalf("after the kill: pass %d %s complete=%v, want pass %d delta, not complete", inv.Pass, inv.Kind, inv.Complete, pass+1)
	}
	before := v.portal.Stats().Calls[taskCommentMethod]
	st, err := v.engine().Get(v.ctx, bitrix.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	if inv := v.inventoryRow(bitrix.Tasks); !st.Resumed || inv.Pass != pass+1 || inv.Kind != engine.PassDelta || !inv.Complete {
		t.Fatalf("rerun: resumed=%v pass %d %s complete=%v, want pass %d resumed as delta, complete", st.Resumed, inv.Pass, inv.Kind, inv.Complete, pass+1)
	}
	if got := v.portal.Stats().Calls[taskCommentMethod] - before; got != 1 {
		t.Errorf("the resumed delta read %d comment lists, want task %d's", got, task.ID)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE source_id = $1 AND status = 'DELETED_AT_SOURCE'`, comment); n != 1 {
		t.Errorf("comment %s deleted on the portal is not DELETED_AT_SOURCE after the resumed delta", comment)
	}
	before = v.portal.Stats().Calls[taskCommentMethod]
	if _, err := v.engine().Get(v.ctx, bitrix.Tasks); err != nil {
		t.Fatal(err)
	}
	if got := v.portal.Stats().Calls[taskCommentMethod] - before; got != 0 {
		t.Errorf("a delta after the resumed one read %d comment lists, want none", got)
	}
}
