package bitrix

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Tasks (seed 000 stage 4.3, research/bitrix.md §5.4, docs/bitrix-feed-tasks.md), their
// checklists and their comments, from either card generation.
const (
	Tasks          = "tasks"
	TaskChecklists = "task_checklists"
	TaskComments   = "task_comments"
)

// taskSelect names every field get reads: the default set of tasks.task.list "may change", and
// CHAT_ID says which card generation holds the task's comments. The custom fields fields-get
// read are added (IDScan.SelectCustom).
var taskSelect = []string{"ID", "PARENT_ID", "TITLE", "DESCRIPTION", "DESCRIPTION_IN_BBCODE", "CREATED_BY", "RESPONSIBLE_ID",
	"ACCOMPLICES", "AUDITORS", "GROUP_ID", "STATUS", "PRIORITY", "MARK", "MULTITASK", "REPLICATE", "CREATED_DATE",
	"CHANGED_BY", "CHANGED_DATE", "STATUS_CHANGED_BY", "STATUS_CHANGED_DATE", "CLOSED_BY", "CLOSED_DATE", "ACTIVITY_DATE",
	"DATE_START", "DEADLINE", "START_DATE_PLAN", "END_DATE_PLAN", "TIME_ESTIMATE", "TIME_SPENT_IN_LOGS", "DURATION_PLAN",
	"DURATION_TYPE", "ALLOW_CHANGE_DEADLINE", "ALLOW_TIME_TRACKING", "TASK_CONTROL", "ADD_IN_REPORT", "MATCH_WORK_TIME",
	"GUID", "XML_ID", "SITE_ID", "TAGS", "UF_CRM_TASK", "UF_TASK_WEBDAV_FILES", "UF_MAIL_MESSAGE", "CHAT_ID"}

// taskShapes are the canonical forms of a task's fields: every field taskSelect asks for is sent
// (but chatId and activityDate, which are not), null when the portal left it out or sent it
// empty (mark, xmlId: null or "" by version), the Y/N flags as booleans.
var taskShapes = engine.Shapes{
	Fields: []string{"id", "parentId", "title", "description", "descriptionInBbcode", "createdBy", "responsibleId",
		"accomplices", "auditors", "groupId", "status", "priority", "mark", "multitask", "replicate", "createdDate",
		"changedBy", "changedDate", "statusChangedBy", "statusChangedDate", "closedBy", "closedDate", "dateStart",
		"deadline", "startDatePlan", "endDatePlan", "timeEstimate", "timeSpentInLogs", "durationPlan", "durationType",
		"allowChangeDeadline", "allowTimeTracking", "taskControl", "addInReport", "matchWorkTime", "guid", "xmlId",
		"siteId", "tags"},
	Booleans: []string{"descriptionInBbcode", "multitask", "replicate", "allowChangeDeadline", "allowTimeTracking",
		"taskControl", "addInReport", "matchWorkTime"},
}

// taskSystemFields are listed by task.item.userfield.getlist on every portal; they are never
// created on the target (research/bitrix.md §5.4).
var taskSystemFields = []string{"UF_CRM_TASK", "UF_MAIL_MESSAGE", "UF_TASK_WEBDAV_FILES"}

func tasksEntity() *engine.Entity {
	ent := &engine.Entity{
		Name:     Tasks,
		Help:     "tasks with their checklists and comments of both card generations (users and groups first; see docs/bitrix-feed-tasks.md)",
		Requires: []string{Users, Groups},
		// tasks.task.list sends "id" but sorts and filters by "ID", its rows under "tasks".
		Lister: &engine.IDScan{Scan: rest.Scan{Method: "tasks.task.list", Params: map[string]any{"select": taskSelect},
			FilterParam: "filter", IDField: "id", FilterField: "ID", RowsPath: []string{"tasks"},
			Order: map[string]any{"order": map[string]any{"ID": "asc"}}},
			CountParams: map[string]any{"select": []string{"ID"}}, SelectCustom: true, Complete: completeTasks,
			// The filter fields tasks.task.list documents hold one modification time, CHANGED_DATE;
			// ACTIVITY_DATE (moved by a comment) is documented for sorting only.
			Modified: []string{"CHANGED_DATE"}},
		Refs: []engine.Ref{
			{Field: "createdBy", Entity: Users, Name: "creator"},
			{Field: "responsibleId", Entity: Users, Name: "responsible"},
			{Field: "groupId", Entity: Groups, Name: "group", Optional: true, DropGone: true},
			// A subtask of a task the webhook's user cannot see is imported without the link.
			{Field: "parentId", Entity: Tasks, Name: "parent task", Optional: true, DropGone: true},
			{Field: "changedBy", Entity: Users, Name: "changed by", Optional: true},
			{Field: "statusChangedBy", Entity: Users, Name: "status changed by", Optional: true},
			{Field: "closedBy", Entity: Users, Name: "closed by", Optional: true},
			{Field: "accomplices", Entity: Users, Values: taskPeople},
		},
		// A child may be listed before its parent: parents go first.
		SelfRef: "parentId",
		Dates: []string{"createdDate", "changedDate", "statusChangedDate", "closedDate", "activityDate", "dateStart",
			"deadline", "startDatePlan", "endDatePlan"},
		// These change as time passes or as people look at the task, not with the task.
		Volatile: []string{"activityDate", "viewedDate", "subStatus", "newCommentsCount", "commentsCount",
			"serviceCommentsCount", "notViewed", "favorite", "isMuted", "isPinned", "isPinnedInGroup", "counter", "action"},
		Shapes: taskShapes,
		Batch:  50,
		Fields: &engine.CustomFields{Method: "task.item.userfield.getlist", Params: map[string]any{"ORDER": map[string]string{"ID": "ASC"}},
			System: taskSystemFields, Creatable: []string{"string", "double", "datetime", "boolean"}},
		Verify: verifyTasks,
	}
	ent.Payload = func(r engine.Record, rf *engine.Refs) (json.RawMessage, error) { return taskPayload(ent, r, rf) }
	return ent
}

func taskChecklistsEntity() *engine.Entity {
	return &engine.Entity{
		Name:   TaskChecklists,
		Noun:   "checklists",
		Parent: Tasks,
		// One record per task: its items refer to each other (PARENT_ID), so they go together.
		Fetch: &engine.ChildFetch{Method: "task.checklistitem.getlist", ParentParam: "TASKID", KeyField: "ID", Whole: true,
			Clean: cleanChecklistItem, Refused: isTaskRefused},
		Refs:     []engine.Ref{{Field: "items", Entity: Users, Name: "people", Values: checklistPeople}},
		Batch:    50,
		NoFields: "checklists have no custom fields in the REST API",
		Payload:  checklistPayload,
	}
}

func taskCommentsEntity(o catalogOptions) *engine.Entity {
	return &engine.Entity{
		Name:   TaskComments,
		Noun:   "comments",
		Parent: Tasks,
		// Old-card tasks: task.commentitem.getlist, positional [TASKID, ORDER], no paging, read
		// with each page of tasks. Tasks with a chat: the chat's messages, read by the chats'
		// messages walk once every task is stored.
		Fetch: &engine.ChildFetch{Method: "task.commentitem.getlist", KeyField: "ID", Clean: cleanTaskComment, Refused: isTaskRefused,
			Params: func(task string) any { return []any{task, map[string]string{"ID": "asc"}} },
			When:   func(task map[string]json.RawMessage) bool { return engine.None(engine.Text(task, "chatId")) },
			// A comment deleted moves no date of its task, its COMMENTS_COUNT ("number of
			// comments", tasks/fields.md) drops: a delta pass compares it (docs/bitrix-delta.md).
			CountField: "commentsCount", CountSelect: "COMMENTS_COUNT"},
		Walk:     taskChats{rescan: o.chatRescan},
		Refs:     []engine.Ref{{Field: "author", Entity: Users, Name: "author", Values: taskCommentUsers}},
		Dates:    []string{"POST_DATE", "date"},
		Volatile: []string{"unread"},
		Batch:    100,
		// A task's comments reach the target in the order they were written.
		Order:    engine.OrderByIDPart(2),
		NoFields: "task comments have no custom fields in the REST API",
		Payload:  taskCommentPayload,
	}
}

// isTaskRefused recognises the tasks module's refusal to show a task's items: ERROR_CORE
// "TASKS_ERROR_EXCEPTION_#8; Action failed" (no access, or the task is gone).
func isTaskRefused(err error) bool {
	apiErr, ok := errors.AsType[*rest.APIError](err)
	return ok && strings.Contains(apiErr.Description, "TASKS_ERROR_EXCEPTION_#8")
}
