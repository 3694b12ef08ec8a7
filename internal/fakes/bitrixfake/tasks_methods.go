package bitrixfake

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The task methods. Error bodies are the docs' (fixtures *.error.json and the method pages).

var (
	errTaskAccess = fail(http.StatusBadRequest, "ERROR_CORE",
		"TASKS_ERROR_EXCEPTION_#8; Action failed; 8/TE/ACTION_FAILED_TO_BE_PROCESSED<br>")
	errTaskSortKey = fail(http.StatusBadRequest, "0", "Invalid sorting key (internal error)")
)

func (p *Portal) registerTasks() {
	p.handlers["tasks.task.list"] = p.taskList
	p.handlers["tasks.task.get"] = p.taskGet
	p.handlers["task.checklistitem.getlist"] = p.checklistGetList
	p.handlers["task.commentitem.getlist"] = p.commentItemGetList
	p.handlers["task.item.userfield.getlist"] = p.taskUserfieldGetList
	// Task chats are chats of the im.* methods (research/bitrix.md §5.4).
	for _, m := range []string{"im.dialog.messages.get", "im.dialog.get", "im.chat.user.list"} {
		orig := p.handlers[m]
		p.handlers[m] = func(params map[string]any) answer {
			if t, ok := p.taskChatFor(params); ok {
				return p.taskChatMethod(m, t, params)
			}
			return orig(params)
		}
	}
}

// taskRowOf renders a task with the overrides tests made.
func (p *Portal) taskRowOf(t *task) object {
	row := p.taskRow(t)
	for k, v := range p.tasks.overrides[t.id] {
		row.set(k, v)
	}
	if p.opts.RealShapes {
		row = p.realTask(row)
	}
	return row
}

// taskFilterFields are the filter keys of tasks.task.list the fake applies, with the row field
// each compares: the documented ones (DOCS tasks/tasks-task-list.md) that the rows carry, and
// ACTIVITY_DATE, which the page lists among the sort keys only but which the portal's task
// filter (CTasks) takes as it takes CHANGED_DATE. The page does not say what the portal does
// with a key it does not list: the fake ignores it, so a client relying on one reads more
// rows, never fewer; Options.TaskFilterAsListed ignores ACTIVITY_DATE too.
var taskFilterFields = map[string]string{
	"ID": "ID", "PARENT_ID": "parentId", "GROUP_ID": "groupId", "CREATED_BY": "createdBy",
	"RESPONSIBLE_ID": "responsibleId", "REAL_STATUS": "status", "STATUS": "subStatus", "PRIORITY": "priority",
	"TITLE": "title", "MARK": "mark", "SITE_ID": "siteId", "STATUS_CHANGED_BY": "statusChangedBy",
	"DATE_START": "dateStart", "DEADLINE": "deadline", "CREATED_DATE": "createdDate", "CLOSED_DATE": "closedDate",
	"CHANGED_DATE": "changedDate", "ACTIVITY_DATE": "activityDate",
}

// taskDateFields are the row fields of task dates: filters on them compare instants.
var taskDateFields = map[string]bool{"dateStart": true, "deadline": true, "createdDate": true, "closedDate": true,
	"changedDate": true, "activityDate": true}

// taskFilter reads tasks.task.list's filter: the keys it knows, on the rows' fields; a date that
// is not one leaves its condition out (the page documents no error for it).
func (p *Portal) taskFilter(fm map[string]any) []cond {
	var out []cond
	for _, c := range parseFilter(fm) {
		field, ok := taskFilterFields[c.field]
		if !ok || p.opts.TaskFilterAsListed && c.field == "ACTIVITY_DATE" {
			continue
		}
		c.field = field
		_, isList := c.value.([]any)
		if field == "ID" && (!slices.Contains([]string{"", "=", ">", ">=", "<", "<=", "@"}, c.op) || isList && c.op != "@") {
			c.field = "id" // not an id range (idRange) nor a set (taskList): compared on the rows
		}
		one := []cond{c}
		if p.datedConds(one, taskDateFields) != "" {
			continue
		}
		out = append(out, one[0])
	}
	return out
}

// taskList is tasks.task.list: order (ID only here; default ID descending), filter (taskFilter),
// select, start; rows under "tasks".
func (p *Portal) taskList(params map[string]any) answer {
	filter, _ := param(params, "filter")
	fm, _ := filter.(map[string]any)
	q := listQuery{filter: p.taskFilter(fm), order: "ID", desc: true, start: startParam(params)}
	if o, ok := param(params, "order"); ok {
		m, _ := o.(map[string]any)
		for field, dir := range m {
			if !strings.EqualFold(field, "ID") {
				return errTaskSortKey
			}
			q.desc = strings.EqualFold(strval(dir), "DESC")
		}
	}
	sel, _ := param(params, "select")
	rows := func(id int) object { return p.taskRowOf(p.tasks.byID[id]) }
	ids := p.tasks.visible
	for i, c := range q.filter { // @ID: the rows carry "id", so the set is applied to the ids
		if c.field == "ID" && c.op == "@" {
			var in []int
			for _, v := range listOf(c.value) {
				if _, ok := p.visibleTask(intval(v)); ok {
					in = append(in, intval(v))
				}
			}
			slices.Sort(in)
			ids = slices.Compact(in)
			q.filter = slices.Delete(slices.Clone(q.filter), i, i+1)
			break
		}
	}
	res := list(ids, rows, q)
	out := make([]object, len(res.rows))
	for i, r := range res.rows {
		out[i] = selectTask(r, listOf(sel), !p.opts.TaskListWithoutChat)
	}
	return answer{result: object{{"tasks", rowsOrEmpty(out)}}, total: res.total, next: res.next, cost: p.cost(res)}
}

// taskGet is tasks.task.get: taskId, select (must be a list).
func (p *Portal) taskGet(params map[string]any) answer {
	v, ok := param(params, "taskId")
	if !ok {
		v, _ = param(params, "id")
	}
	sel, has := param(params, "select")
	if has {
		if _, isMap := sel.(map[string]any); isMap && len(sel.(map[string]any)) == 0 {
			return fail(http.StatusBadRequest, "100", "Invalid value {} to match with parameter {select}. Should be value of type array. (internal error)")
		}
	}
	t, found := p.visibleTask(intval(v))
	if !found {
		return fail(http.StatusBadRequest, "ERROR_CORE", "TASKS_ERROR_EXCEPTION_#8; Action failed; 8/TE/ACTION_FAILED_TO_BE_PROCESSED<br>")
	}
	row := selectTask(p.taskRowOf(t), listOf(sel), true)
	return answer{result: object{{"task", row}}, cost: p.opts.CallCost}
}

// taskOf reads TASKID (named, or positional as the old methods take it).
func (p *Portal) taskOf(params map[string]any, named bool) (*task, answer, bool) {
	v, ok := params["0"]
	if !ok && named {
		v, ok = param(params, "TASKID")
	}
	if !ok || intval(v) <= 0 {
		return nil, fail(http.StatusBadRequest, "ERROR_CORE", "TASKS_ERROR_EXCEPTION_#256; Param #0 (taskId) for method "+
			"ctaskitem::getlist() expected to be of type \"integer\", but given something else.; 256/TE/WRONG_ARGUMENTS<br>"), false
	}
	t, found := p.visibleTask(intval(v))
	if !found {
		return nil, errTaskAccess, false
	}
	return t, answer{}, true
}

// checklistGetList is task.checklistitem.getlist: TASKID, ORDER (default ID descending).
func (p *Portal) checklistGetList(params map[string]any) answer {
	t, refusal, ok := p.taskOf(params, true)
	if !ok {
		return refusal
	}
	items := slices.Clone(t.checklist)
	slices.SortFunc(items, func(a, b checkItem) int { return b.id - a.id })
	rows := make([]object, len(items))
	for i, it := range items {
		rows[i] = p.checklistRow(t, it)
	}
	return answer{result: rowsOrEmpty(rows), cost: p.opts.CallCost + time.Duration(len(rows))*p.opts.RowCost}
}

// commentItemGetList is task.commentitem.getlist: positional [TASKID, ORDER, FILTER], every
// comment at once, ID descending by default. A new-card task's comments are in its chat: the
// forum topic it reads is empty (an assumption; the docs only say the method "does not work in
// the new task card").
func (p *Portal) commentItemGetList(params map[string]any) answer {
	t, refusal, ok := p.taskOf(params, false)
	if !ok {
		return refusal
	}
	asc := false
	if o, ok := params["1"].(map[string]any); ok {
		for k, dir := range o {
			if !slices.Contains([]string{"ID", "AUTHOR_ID", "AUTHOR_NAME", "POST_DATE"}, strings.ToUpper(k)) {
				return fail(http.StatusBadRequest, "ERROR_CORE", "TASKS_ERROR_EXCEPTION_#256; Param #1 (arOrder) for method "+
					"ctaskcommentitem::getlist() must not contain key \""+k+"\".; 256/TE/WRONG_ARGUMENTS.<br>")
			}
			asc = strings.EqualFold(strval(dir), "ASC")
		}
	}
	rows := []object{}
	if !t.chat {
		for _, k := range t.commentIndexes() {
			rows = append(rows, p.taskComment(t, k))
		}
	}
	if !asc {
		slices.Reverse(rows)
	}
	return answer{result: rows, cost: p.opts.CallCost + time.Duration(len(rows))*p.opts.RowCost}
}

// taskUserfieldGetList is task.item.userfield.getlist: every field at once, the system ones too;
// total is 0, as in the docs' sample.
func (p *Portal) taskUserfieldGetList(map[string]any) answer {
	total := 0
	return answer{result: p.tasks.userfields, total: &total, cost: p.opts.CallCost}
}

// taskChatMethod answers the im methods for a task's chat: readable by the webhook's user
// unless the chat refuses it (ACCESS_ERROR, as for chats it is not in).
func (p *Portal) taskChatMethod(method string, t *task, params map[string]any) answer {
	if t.chatRefused {
		if method == "im.chat.user.list" {
			return answer{result: []int{}, cost: p.opts.CallCost}
		}
		return errDialogAccess
	}
	members := append([]int{t.creator, t.responsible}, append(slices.Clone(t.accomplices), t.auditors...)...)
	slices.Sort(members)
	members = slices.Compact(members)
	switch method {
	case "im.chat.user.list":
		return answer{result: members, cost: p.opts.CallCost}
	case "im.dialog.get":
		ids := taskMessageIDs(t)
		last := 0
		if len(ids) > 0 {
			last = ids[len(ids)-1]
		}
		return answer{result: object{{"id", taskChatBase + t.id}, {"name", t.title}, {"type", "tasksTask"},
			{"entity_type", "TASKS_TASK"}, {"entity_id", strconv.Itoa(t.id)}, {"message_count", len(ids)},
			{"last_message_id", last}, {"dialog_id", "chat" + strconv.Itoa(taskChatBase+t.id)}}, cost: p.opts.CallCost}
	}
	firstID, hasFirst, bad := cursorParam(params, "FIRST_ID")
	if bad != nil {
		return *bad
	}
	lastID, _, bad := cursorParam(params, "LAST_ID")
	if bad != nil {
		return *bad
	}
	limit := 20
	if v, has := param(params, "LIMIT"); has && intval(v) > 0 {
		limit = min(intval(v), 50)
	}
	ids := taskMessageIDs(t)
	var page []int
	if hasFirst {
		from, _ := slices.BinarySearch(ids, firstID+1)
		page = ids[from:min(len(ids), from+limit)]
	} else {
		to := len(ids)
		if lastID > 0 {
			to, _ = slices.BinarySearch(ids, lastID)
		}
		page = slices.Clone(ids[max(0, to-limit):to])
		slices.Reverse(page)
	}
	messages, files := []object{}, []object{}
	for _, id := range page {
		m := p.taskMessage(t, id-taskMessageBase-t.id*64)
		messages = append(messages, p.render(m))
		for _, f := range m.files {
			files = append(files, p.file(f, m))
		}
	}
	return answer{result: object{{"chat_id", taskChatBase + t.id}, {"messages", messages}, {"users", []any{}}, {"files", files}},
		cost: p.opts.CallCost + time.Duration(len(page))*p.opts.RowCost}
}

// TaskInfo describes a generated task as tests need to know it.
type TaskInfo struct {
	ID, Parent int
	// Hidden tasks are not listed: the webhook's user may not see them.
	Hidden bool
	// Chat is set for new-card tasks; ChatRefused when their chat refuses the webhook's user.
	Chat, ChatRefused bool
	// Comments is how many comments the task has (chat messages, the creation's system message
	// included, or old-card comments); Checklist how many checklist items.
	Comments, Checklist int
}

// TaskInfos returns every task of the portal, ascending by id, hidden ones included.
func (p *Portal) TaskInfos() []TaskInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]TaskInfo, 0, len(p.tasks.ids))
	for _, id := range p.tasks.ids {
		t := p.tasks.byID[id]
		out = append(out, TaskInfo{ID: id, Parent: t.parent, Hidden: t.hidden, Chat: t.chat, ChatRefused: t.chatRefused,
			Comments: len(t.commentIndexes()), Checklist: len(t.checklist)})
	}
	return out
}

// SetTaskField changes a field of a task's tasks.task.list row (camelCase key), as an edit on
// the portal would.
func (p *Portal) SetTaskField(id int, field string, value any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tasks.overrides[id] == nil {
		p.tasks.overrides[id] = map[string]any{}
	}
	if raw, ok := value.(json.RawMessage); ok {
		var v any
		_ = json.Unmarshal(raw, &v)
		value = v
	}
	p.tasks.overrides[id][field] = value
}
