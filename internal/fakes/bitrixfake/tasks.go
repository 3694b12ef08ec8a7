package bitrixfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	embedded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// Tasks, generated from the seed like users and groups (research/bitrix.md §5.4, fixtures
// tasks.task.list.json, tasks.task.get*.json, task.commentitem.getlist.json,
// task.checklistitem.getlist in the docs, task.item.userfield.getlist.json). What is modelled:
//
//   - tasks.task.list answers in camelCase with string ids, only the selected fields, group as
//     [] or as an object, tags as an object keyed by tag id ([] when none), the custom fields
//     under their names, the system ones in camelCase (ufCrmTask); default order ID descending;
//   - a few tasks the webhook's user may not see: not listed, refused by tasks.task.get and by
//     the item methods (ERROR_CORE TASKS_ERROR_EXCEPTION_#8); their subtasks are listed, with a
//     parentId naming a task nobody can read;
//   - a parent may have a higher ID than its child (tasks are moved under others);
//   - about half the tasks are in the new card: chatId set, comments are the messages of the
//     task's chat (im.*, task chats from taskChatBase), and a few of those chats refuse the
//     webhook's user (ACCESS_ERROR); the others keep their comments in the old card,
//     task.commentitem.getlist (positional parameters, no paging, ID descending by default,
//     attachments with download URLs that carry a token);
//   - checklists: trees of items (PARENT_ID 0 for a checklist's root, a string id otherwise).

const (
	kindTask uint64 = kindMessage + 1 + iota
	kindTaskRank
	kindPost
)

// taskChatBase is where the ids of task chats begin: far above the chats of initIM.
const taskChatBase = 1_000_000

// taskMessageBase is where the message ids of task chats begin; message k of task t is
// taskMessageBase + t*64 + k.
const taskMessageBase = 200_000_000

// maxTaskComments bounds the comments of one task (the message id layout above).
const maxTaskComments = 63

var taskUserfieldsSample = embedded.ReadFile("bitrix/task.item.userfield.getlist.json")

// task is a generated task.
type task struct {
	id                       int
	hidden                   bool // the webhook's user may not see it
	parent                   int
	chat                     bool // new card: comments are the chat's messages
	chatRefused              bool
	comments                 int
	gone                     map[int]bool // comments deleted since, by index (delete.go)
	creator, responsible     int
	accomplices, auditors    []int
	group                    int
	created                  time.Time
	checklist                []checkItem
	status, priority         int
	title, description, mark string
	tags                     []int
	// What changed since (mutate.go): the times of the last edit and of the last activity (zero:
	// the generated ones), how many edits, and the dates of comments added, by index.
	changed, activity time.Time
	edits             int
	addedAt           map[int]time.Time
}

// checkItem is one checklist item.
type checkItem struct {
	id, parent int
	title      string
	complete   bool
	members    []int
}

var (
	taskTags = []string{"срочно", "клиент", "отчёт", "маркетинг", "сайт", "1С", "закупка", "склад"}
	checks   = []string{"Согласовать с клиентом", "Подготовить документы", "Проверить счёт", "Отправить на подпись",
		"Обновить CRM", "Созвониться с поставщиком", "Собрать требования"}
)

// taskRank orders tasks for choosing parents: a task's parent always ranks lower, so parents
// form no cycle whatever their ids.
func (p *Portal) taskRank(id int) uint64 { return p.rng(kindTaskRank, id).Uint64() }

// genTask builds a task from its id.
func (p *Portal) genTask(id int) *task {
	r := p.rng(kindTask, id)
	user := func() int {
		if len(p.allUsers) == 0 {
			return 1
		}
		return p.allUsers[r.IntN(len(p.allUsers))]
	}
	t := &task{id: id, hidden: r.IntN(97) == 0, creator: user(), responsible: user(),
		status: 2 + r.IntN(5), priority: r.IntN(3), title: pick(r, taskTitles)}
	t.created = p.past(between(r, p.epoch().AddDate(8, 0, 0), 2*365*24*time.Hour))
	if r.IntN(4) == 0 && len(p.tasks.ids) > 1 {
		cand := p.tasks.ids[r.IntN(len(p.tasks.ids))]
		if cand != id && p.taskRank(cand) < p.taskRank(id) {
			t.parent = cand
		}
	}
	for range r.IntN(3) {
		t.accomplices = append(t.accomplices, user())
	}
	for range r.IntN(4) {
		t.auditors = append(t.auditors, user())
	}
	slices.Sort(t.accomplices)
	t.accomplices = slices.Compact(t.accomplices)
	slices.Sort(t.auditors)
	t.auditors = slices.Compact(t.auditors)
	if len(p.groups) > 0 && r.IntN(5) < 2 {
		t.group = p.groups[r.IntN(len(p.groups))]
	}
	t.description = pick(r, phrases)
	if r.IntN(3) == 0 {
		t.description = fmt.Sprintf("%s, [B]%s[/B]", p.userTag(t.responsible, false), pick(r, phrases))
	}
	switch r.IntN(3) {
	case 0:
		t.mark = "P"
	case 1:
		t.mark = "N"
	}
	for range r.IntN(3) {
		t.tags = append(t.tags, 1+r.IntN(len(taskTags)))
	}
	slices.Sort(t.tags)
	t.tags = slices.Compact(t.tags)
	t.chat = r.IntN(100) < p.tasks.chatShare
	t.chatRefused = t.chat && r.IntN(40) == 0
	t.comments = min(r.IntN(2*p.tasks.comments+1), maxTaskComments)
	if r.IntN(2) == 0 {
		next := id * 32
		for range 1 + r.IntN(2) {
			root := checkItem{id: next, title: "Чек-лист " + strconv.Itoa(next%7+1)}
			next++
			t.checklist = append(t.checklist, root)
			for range 1 + r.IntN(4) {
				it := checkItem{id: next, parent: root.id, title: pick(r, checks), complete: r.IntN(3) == 0}
				next++
				if r.IntN(4) == 0 {
					it.members = []int{user()}
				}
				t.checklist = append(t.checklist, it)
				if r.IntN(5) == 0 { // a sub-item
					t.checklist = append(t.checklist, checkItem{id: next, parent: it.id, title: pick(r, checks)})
					next++
				}
			}
		}
	}
	return t
}

// taskState is the tasks of the portal.
type taskState struct {
	ids        []int // every task id, ascending, hidden ones included
	maxID      int   // the highest id Portal.Add gave
	visible    []int // what tasks.task.list lists
	chatShare  int   // percent of tasks in the new card
	comments   int   // average comments per task
	userfields []json.RawMessage
	byID       map[int]*task
	overrides  map[int]map[string]any
	// names caches people's and groups' names: a row names up to a dozen people, and
	// generating a user's whole row for each would make the fake, not the client, the bound.
	names, groupNames map[int]string
}

// personName is a user's display name, cached.
func (p *Portal) personName(id int) string {
	if n, ok := p.tasks.names[id]; ok {
		return n
	}
	n := p.displayName(id)
	p.tasks.names[id] = n
	return n
}

// groupName is a workgroup's name, cached.
func (p *Portal) groupName(id int) string {
	if n, ok := p.tasks.groupNames[id]; ok {
		return n
	}
	name, _ := p.groupRow(id, 0).get("NAME")
	p.tasks.groupNames[id] = strval(name)
	return strval(name)
}

func (p *Portal) initTasks() {
	s := &p.tasks
	s.ids = generateIDs(p.opts.Tasks, 9)
	s.chatShare = p.opts.TaskChatPercent
	switch {
	case s.chatShare == 0:
		s.chatShare = 50
	case s.chatShare < 0:
		s.chatShare = 0
	}
	s.comments = p.opts.TaskComments
	if s.comments <= 0 {
		s.comments = 4
	}
	s.byID = make(map[int]*task, len(s.ids))
	s.overrides = map[int]map[string]any{}
	s.names, s.groupNames = map[int]string{}, map[int]string{}
	for _, id := range s.ids {
		t := p.genTask(id)
		s.byID[id] = t
		if !t.hidden {
			s.visible = append(s.visible, id)
		}
	}
	var sample struct{ Result []json.RawMessage }
	if err := json.Unmarshal(taskUserfieldsSample, &sample); err != nil {
		panic(fmt.Sprintf("bitrixfake: embedded task.item.userfield.getlist sample: %v", err))
	}
	s.userfields = append(sample.Result, json.RawMessage(`{"ID":"1341","ENTITY_ID":"TASKS_TASK","FIELD_NAME":"UF_TASK_STORY_POINTS",`+
		`"USER_TYPE_ID":"integer","XML_ID":"UF_TASK_STORY_POINTS","SORT":"260","MULTIPLE":"N","MANDATORY":"N","SHOW_FILTER":"N",`+
		`"SHOW_IN_LIST":"Y","EDIT_IN_LIST":"Y","IS_SEARCHABLE":"N","SETTINGS":{"SIZE":20,"MIN_VALUE":0,"MAX_VALUE":0,"DEFAULT_VALUE":null}}`))
	p.registerTasks()
}

// camel turns a select name into tasks.task.list's key: CREATED_BY -> createdBy, UF_CRM_TASK ->
// ufCrmTask. Custom fields keep their names.
func camel(name string) string {
	out := make([]byte, 0, len(name))
	upper := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_':
			upper = true
			continue
		case upper:
			upper = false
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

// taskRow renders a task as tasks.task.list does, every field; taskRow's caller selects.
func (p *Portal) taskRow(t *task) object {
	r := p.rng(kindTask, t.id*7+1)
	ids := func(list []int) []any {
		out := make([]any, len(list))
		for i, u := range list {
			out[i] = strconv.Itoa(u)
		}
		return out
	}
	date := func(tm time.Time) any { return p.isoDate(tm) }
	var closedBy, closedDate any = "0", nil
	// The status changed, and the task was closed and last viewed, when it was last changed as
	// generated; an edit since (mutate.go) moves changedDate only.
	statusChanged := p.past(t.created.Add(time.Duration(1+r.IntN(500)) * time.Hour))
	if statusChanged.Before(t.created) { // a task added since, after the portal's clock was read
		statusChanged = t.created
	}
	changed := statusChanged
	if !t.changed.IsZero() {
		changed = t.changed
	}
	activity := changed
	if last, ok := p.lastTaskComment(t); ok && last.After(activity) {
		activity = last
	}
	if t.activity.After(activity) {
		activity = t.activity
	}
	if t.status == 5 {
		closedBy, closedDate = strconv.Itoa(t.responsible), date(statusChanged)
	}
	var deadline, startPlan, endPlan, dateStart any
	if r.IntN(2) == 0 {
		deadline = date(t.created.Add(time.Duration(24*(1+r.IntN(30))) * time.Hour))
	}
	if r.IntN(4) == 0 {
		startPlan, endPlan = date(t.created.Add(24*time.Hour)), date(t.created.Add(72*time.Hour))
	}
	if t.status >= 3 {
		dateStart = date(t.created.Add(2 * time.Hour))
	}
	var parent any
	if t.parent != 0 {
		parent = strconv.Itoa(t.parent)
	}
	var chatID any
	if t.chat {
		chatID = taskChatBase + t.id
	}
	tags := phpArray(nil, nil)
	if len(t.tags) > 0 {
		keys := make([]string, len(t.tags))
		vals := map[string]any{}
		for i, tag := range t.tags {
			keys[i] = strconv.Itoa(tag)
			vals[keys[i]] = object{{"id", tag}, {"title", taskTags[tag-1]}}
		}
		tags = phpArray(keys, vals)
	}
	var group any = []any{}
	if t.group != 0 {
		group = object{{"id", strconv.Itoa(t.group)}, {"name", p.groupName(t.group)}, {"opened", false}, {"membersCount", 0},
			{"image", ""}, {"additionalData", []any{}}}
	}
	files := any(false)
	if r.IntN(4) == 0 {
		files = []int{1000 + t.id, 1001 + t.id}
	}
	crm := []any{}
	if r.IntN(6) == 0 {
		crm = []any{"C_" + strconv.Itoa(600+t.id%50), "D_" + strconv.Itoa(1700+t.id%90)}
	}
	var request, budget, approval any
	legal := "0"
	if r.IntN(2) == 0 {
		request = "Уточнить цель: " + pick(r, phrases)
		budget = strconv.Itoa(1000*(1+r.IntN(90))) + ".5"
		approval = date(t.created.Add(240 * time.Hour))
		legal = "1"
	}
	person := func(id int) object {
		return object{{"id", strconv.Itoa(id)}, {"name", p.personName(id)}, {"link", "/company/personal/user/" + strconv.Itoa(id) + "/"},
			{"icon", "/bitrix/images/tasks/default_avatar.png"}, {"workPosition", ""}}
	}
	people := func(list []int) any {
		keys := make([]string, len(list))
		vals := map[string]any{}
		for i, u := range list {
			keys[i] = strconv.Itoa(u)
			vals[keys[i]] = person(u)
		}
		return phpArray(keys, vals)
	}
	return object{
		{"id", strconv.Itoa(t.id)},
		{"parentId", parent},
		{"title", t.title + " №" + strconv.Itoa(t.id) + editMark(t.edits)},
		{"description", t.description},
		{"descriptionInBbcode", "Y"},
		{"createdBy", strconv.Itoa(t.creator)},
		{"responsibleId", strconv.Itoa(t.responsible)},
		{"accomplices", ids(t.accomplices)},
		{"auditors", ids(t.auditors)},
		{"groupId", strconv.Itoa(t.group)},
		{"status", strconv.Itoa(t.status)},
		{"subStatus", strconv.Itoa(t.status)},
		{"priority", strconv.Itoa(t.priority)},
		{"mark", nilIfEmpty(t.mark)},
		{"multitask", "N"},
		{"replicate", "N"},
		{"createdDate", date(t.created)},
		{"changedBy", strconv.Itoa(t.responsible)},
		{"changedDate", date(changed)},
		{"statusChangedBy", strconv.Itoa(t.responsible)},
		{"statusChangedDate", date(statusChanged)},
		{"closedBy", closedBy},
		{"closedDate", closedDate},
		{"activityDate", date(activity)},
		{"dateStart", dateStart},
		{"deadline", deadline},
		{"startDatePlan", startPlan},
		{"endDatePlan", endPlan},
		{"timeEstimate", strconv.Itoa(3600 * r.IntN(10))},
		{"timeSpentInLogs", nil},
		{"durationPlan", nil},
		{"durationType", "days"},
		{"allowChangeDeadline", "Y"},
		{"allowTimeTracking", "N"},
		{"taskControl", "N"},
		{"addInReport", "N"},
		{"matchWorkTime", "N"},
		{"commentsCount", strconv.Itoa(t.commentCount())},
		{"guid", fmt.Sprintf("{%08x-%04x-4%03x-8%03x-%012x}", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48))},
		{"xmlId", nil},
		{"siteId", "s1"},
		{"chatId", chatID},
		{"tags", tags},
		{"ufCrmTask", crm},
		{"ufTaskWebdavFiles", files},
		{"ufMailMessage", nil},
		{"UF_TASK_CLIENT_REQUEST", request},
		{"UF_TASK_PROJECT_BUDGET", budget},
		{"UF_TASK_APPROVAL_DEADLINE", approval},
		{"UF_TASK_LEGAL_REVIEW_REQUIRED", legal},
		{"UF_TASK_STORY_POINTS", strconv.Itoa(r.IntN(13))},
		// Presentation tasks.task.list adds to the fields it was asked for.
		{"group", group},
		{"creator", person(t.creator)},
		{"responsible", person(t.responsible)},
		{"accomplicesData", people(t.accomplices)},
		{"auditorsData", people(t.auditors)},
		{"favorite", "N"},
		{"viewedDate", date(statusChanged)},
		{"counter", object{{"counters", object{{"expired", 0}, {"newComments", 0}}}, {"color", "gray"}, {"value", 0}}},
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// presentationOf names the presentation fields each selected field brings along.
var presentationOf = map[string][]string{
	"GROUP_ID":       {"group"},
	"CREATED_BY":     {"creator"},
	"RESPONSIBLE_ID": {"responsible"},
	"ACCOMPLICES":    {"accomplicesData"},
	"AUDITORS":       {"auditorsData"},
}

// selectTask keeps the selected fields of a task row (always its id and subStatus, as the
// fixture shows); an empty select gives the default set, the row's own fields without custom
// ones. A system UF field selected brings all three.
func selectTask(row object, sel []any, withChat bool) object {
	want := map[string]bool{"id": true, "subStatus": true, "favorite": true, "counter": true}
	if len(sel) == 0 {
		for _, f := range row {
			if f.key[0] >= 'a' && f.key[0] <= 'z' && f.key != "chatId" {
				want[f.key] = true
			}
		}
	}
	for _, s := range sel {
		name := strval(s)
		switch name {
		case "UF_CRM_TASK", "UF_MAIL_MESSAGE", "UF_TASK_WEBDAV_FILES":
			want["ufCrmTask"], want["ufMailMessage"], want["ufTaskWebdavFiles"] = true, true, true
		}
		if len(name) > 3 && name[:3] == "UF_" {
			want[name] = true
		}
		want[camel(name)] = true
		for _, extra := range presentationOf[name] {
			want[extra] = true
		}
	}
	if !withChat {
		delete(want, "chatId")
	}
	out := make(object, 0, len(want))
	for _, f := range row {
		if want[f.key] {
			out = append(out, f)
		}
	}
	return out
}

// task returns a visible task by id.
func (p *Portal) visibleTask(id int) (*task, bool) {
	t, ok := p.tasks.byID[id]
	return t, ok && !t.hidden
}

// taskChatFor returns the task whose chat a DIALOG_ID names, if it is a task chat.
func (p *Portal) taskChatFor(params map[string]any) (*task, bool) {
	v, ok := param(params, "DIALOG_ID")
	if !ok {
		v, ok = param(params, "CHAT_ID")
		if ok {
			v = "chat" + strconv.Itoa(intval(v))
		}
	}
	m := chatDialogID.FindStringSubmatch(strval(v))
	if !ok || m == nil {
		return nil, false
	}
	id, _ := strconv.Atoi(m[1])
	if id <= taskChatBase {
		return nil, false
	}
	t, found := p.tasks.byID[id-taskChatBase]
	return t, found && t.chat
}

// taskMessageIDs returns the message ids of a task's chat, ascending.
func taskMessageIDs(t *task) []int {
	ids := make([]int, 0, t.comments)
	for _, k := range t.commentIndexes() {
		ids = append(ids, taskMessageBase+t.id*64+k)
	}
	return ids
}

// commentIndexes are the indexes of a task's comments (chat messages or old-card comments) that
// were not deleted, ascending.
func (t *task) commentIndexes() []int {
	out := make([]int, 0, t.comments)
	for k := range t.comments {
		if !t.gone[k] {
			out = append(out, k)
		}
	}
	return out
}

// taskMessage builds message k of a task's chat: first the system message of the task's
// creation, then the members' comments.
func (p *Portal) taskMessage(t *task, k int) message {
	id := taskMessageBase + t.id*64 + k
	r := p.rng(kindMessage, id)
	m := message{id: id, chatID: taskChatBase + t.id, date: p.taskCommentTime(t, k)}
	if k == 0 {
		m.text = fmt.Sprintf("%s создал(а) задачу", p.userTag(t.creator, true))
		m.params = object{{"NOTIFY", "N"}}
		return m
	}
	people := append([]int{t.creator, t.responsible}, append(slices.Clone(t.accomplices), t.auditors...)...)
	m.author = pick(r, people)
	m.uuid = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Int64N(1<<48))
	m.text = pick(r, phrases)
	switch r.IntN(10) {
	case 0:
		m.text = p.userTag(pick(r, people), false) + ", " + m.text
	case 1:
		m.files = []int{2 * id}
		m.params = object{{"FILE_ID", m.files}}
	case 2:
		m.params = object{{"LIKE", []int{pick(r, people)}}}
	}
	return m
}

// taskComment renders old-card comment k of a task as task.commentitem.getlist does.
func (p *Portal) taskComment(t *task, k int) object {
	id := t.id*64 + k
	r := p.rng(kindMessage, id)
	people := append([]int{t.creator, t.responsible}, t.accomplices...)
	author := pick(r, people)
	text := pick(r, phrases)
	if r.IntN(6) == 0 {
		text = p.userTag(pick(r, people), false) + ", " + text
	}
	var attached any = object{}
	if r.IntN(5) == 0 {
		a := strconv.Itoa(900 + id)
		attached = object{{a, object{{"ATTACHMENT_ID", a}, {"NAME", "photo" + a + ".png"}, {"SIZE", strconv.Itoa(1000 + r.IntN(900000))},
			{"FILE_ID", strconv.Itoa(4000 + id)},
			{"DOWNLOAD_URL", "/bitrix/tools/disk/uf.php?attachedId=" + a + "&auth%5Bauth%5D=" + fmt.Sprintf("%09x", r.Uint64()) + "&action=download&ncc=1"},
			{"VIEW_URL", "/bitrix/tools/disk/uf.php?attachedId=" + a + "&auth%5Bauth%5D=" + fmt.Sprintf("%09x", r.Uint64()) + "&action=show&ncc=1"}}}}
	}
	return object{
		{"POST_MESSAGE_HTML", nil},
		{"ID", strconv.Itoa(id)},
		{"AUTHOR_ID", strconv.Itoa(author)},
		{"AUTHOR_NAME", p.personName(author)},
		{"AUTHOR_EMAIL", ""},
		{"POST_DATE", p.isoDate(p.taskCommentTime(t, k))},
		{"POST_MESSAGE", text},
		{"ATTACHED_OBJECTS", attached},
	}
}

// checklistRow renders a checklist item as task.checklistitem.getlist does.
func (p *Portal) checklistRow(t *task, it checkItem) object {
	var parent any = 0
	if it.parent != 0 {
		parent = strconv.Itoa(it.parent)
	}
	var toggledBy, toggledDate any = nil, ""
	if it.complete {
		toggledBy, toggledDate = strconv.Itoa(t.responsible), p.isoDate(t.created.Add(50*time.Hour))
	}
	members := []any{}
	for _, u := range it.members {
		members = append(members, object{{"ID", strconv.Itoa(u)}, {"TYPE", "A"}, {"NAME", p.personName(u)},
			{"PERSONAL_PHOTO", "8644"}, {"PERSONAL_GENDER", "F"}, {"IMAGE", "https://mysite.com/resize_cache/8644/avatar.jpg"},
			{"IS_COLLABER", false}})
	}
	return object{
		{"ID", strconv.Itoa(it.id)},
		{"TASK_ID", strconv.Itoa(t.id)},
		{"PARENT_ID", parent},
		{"CREATED_BY", strconv.Itoa(t.creator)},
		{"TITLE", it.title},
		{"SORT_INDEX", strconv.Itoa(it.id % 5)},
		{"IS_COMPLETE", yn(it.complete)},
		{"IS_IMPORTANT", "N"},
		{"TOGGLED_BY", toggledBy},
		{"TOGGLED_DATE", toggledDate},
		{"MEMBERS", members},
		{"ATTACHMENTS", []any{}},
	}
}

// taskCommentTime is the date of comment k of a task: a message of its chat every 37 minutes from
// its creation, an old-card comment every 41, or when it was added (mutate.go).
func (p *Portal) taskCommentTime(t *task, k int) time.Time {
	if at, ok := t.addedAt[k]; ok {
		return at
	}
	step := 41 * time.Minute
	if t.chat {
		step = 37 * time.Minute
	}
	return p.past(t.created.Add(time.Duration(k) * step).Truncate(time.Second))
}

// lastTaskComment is the date of a task's newest comment, deleted or not (a deletion does not
// turn activity back); ok is false for a task without comments.
func (p *Portal) lastTaskComment(t *task) (time.Time, bool) {
	if t.comments == 0 {
		return time.Time{}, false
	}
	return p.taskCommentTime(t, t.comments-1), true
}

// commentCount is a task's commentsCount: its comments not deleted, without the system message
// of a new-card task's creation.
func (t *task) commentCount() int {
	n := len(t.commentIndexes())
	if t.chat && t.comments > 0 && !t.gone[0] {
		n--
	}
	return n
}

// editMark is what an edit (mutate.go) appends to a record's title.
func editMark(edits int) string {
	if edits == 0 {
		return ""
	}
	return " (правка " + strconv.Itoa(edits) + ")"
}
