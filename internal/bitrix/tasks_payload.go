package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// What the target receives for tasks, checklists and task comments (docs/target-import-api.md,
// "Tasks").

// taskDisplay are what tasks.task.list adds for display (the people's names and avatars, the
// group's card, counters, the actions the webhook's user may take): not stored, which makes a
// task's record about half as large.
var taskDisplay = []string{"creator", "responsible", "accomplicesData", "auditorsData", "group", "parsedDescription",
	"checkListTree", "checkListCanAdd", "checklist", "timerIsRunningForCurrentUser", "counter", "action"}

// completeTasks prepares a page of tasks.task.list rows for storing: the group's id taken from
// its card when groupId was not sent, the display fields dropped, and chatId filled in for rows
// sent without it, from tasks.task.get with select CHAT_ID (the documented way to learn a task's
// chat, fixture tasks.task.get.chatid.json), 50 tasks to a call; a task it cannot read keeps
// none and is taken for an old-card one.
func completeTasks(ctx context.Context, e engine.Env, rows []json.RawMessage) ([]json.RawMessage, error) {
	var cmds []rest.Command
	at := map[string]int{}
	fields := make([]map[string]json.RawMessage, len(rows))
	for i, row := range rows {
		f, err := engine.FieldsOf(row)
		if err != nil {
			return nil, err
		}
		fields[i] = f
		if _, ok := f["groupId"]; !ok { // the group comes as [] or as an object with its id
			if g, err := engine.FieldsOf(f["group"]); err == nil && engine.Text(g, "id") != "" {
				f["groupId"] = engine.MustJSON(engine.Text(g, "id"))
			}
		}
		for _, k := range taskDisplay {
			delete(f, k)
		}
		if _, ok := f["chatId"]; ok {
			continue
		}
		id := engine.Text(f, "id")
		at[id] = i
		cmds = append(cmds, rest.Command{Key: "t" + id, Method: "tasks.task.get",
			Params: map[string]any{"taskId": id, "select": []string{"ID", "CHAT_ID"}}})
	}
	err := e.BatchEach(ctx, cmds, func(key string, r *rest.Response) error {
		var res struct {
			Task map[string]json.RawMessage `json:"task"`
		}
		if err := r.Decode(&res); err != nil {
			return fmt.Errorf("tasks.task.get %s: %w", key[1:], err)
		}
		chat := res.Task["chatId"]
		if chat == nil {
			chat = json.RawMessage("null")
		}
		fields[at[key[1:]]]["chatId"] = chat
		return nil
	}, func(key string, err error) error {
		e.Log().Warn("task's chat unknown: tasks.task.get refused; its comments are read from the old card", "task", key[1:], "error", err)
		return nil
	})
	out := make([]json.RawMessage, len(rows))
	for i, f := range fields {
		out[i] = engine.MustJSON(f)
	}
	return out, err
}

// taskPeople lists the users a task names besides its plain references: accomplices, auditors and
// those its description mentions.
func taskPeople(f map[string]json.RawMessage) []string {
	return append(append(idList(f["accomplices"]), idList(f["auditors"])...), mentionsIn(f, "description", "title")...)
}

// taskPayload is a task as tasks.task.list sent it, without its volatile fields and chatId:
// people, group and parent as target ids (none is null), tags as a list of titles, every date in
// its original offset, custom fields under their field names (UF_CRM_TASK, not ufCrmTask) with
// the values of fields the target cannot hold left out.
func taskPayload(ent *engine.Entity, r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	fields, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	engine.LocalDates(fields, r.Dates)
	for _, k := range append(slices.Clone(ent.Volatile), "chatId") { // the source's chat means nothing there
		delete(fields, k)
	}
	for _, k := range engine.SortedKeys(fields) {
		f, ok := rf.CustomField(k)
		if !ok {
			continue
		}
		v := fields[k]
		delete(fields, k)
		switch {
		case f.System || f.OnTarget:
			fields[f.Name] = v
		case ent.Fields.CanCreate(f.Type):
			return nil, fmt.Errorf("custom field %s is not on the target yet: run `ingest bitrix %s fields-set`", f.Name, ent.Name)
		} // a type the target cannot create: left out, named by verify
	}
	if err := rf.Enums.Translate(fields); err != nil {
		return nil, err
	}
	if err := engine.TranslatePlain(ent, r, fields, rf); err != nil {
		return nil, err
	}
	for _, ref := range ent.Refs { // the tasks contract: no group, no parent... is null
		if ref.Optional && engine.None(engine.Text(fields, ref.Field)) {
			fields[ref.Field] = json.RawMessage("null")
		}
	}
	for _, role := range []string{"accomplices", "auditors"} {
		mapped, missing := mapUsers(idList(fields[role]), rf.Of(Users))
		if len(missing) > 0 {
			return nil, &UnmappedUsersError{Field: role, Users: missing}
		}
		fields[role] = engine.MustJSON(mapped)
	}
	fields["tags"] = engine.MustJSON(tagTitles(fields["tags"]))
	if err := translateTextFields(fields, rf.Of(Users), "title", "description"); err != nil {
		return nil, err
	}
	return engine.MustJSON(fields), nil
}

// tagTitles reads a task's tags: an object keyed by tag id ({"35": {"id": 35, "title": "x"}}),
// [] when there are none, or a list of names; it returns the titles, sorted.
func tagTitles(raw json.RawMessage) []string {
	out := []string{}
	var byID map[string]struct {
		Title string `json:"title"`
	}
	var names []string
	switch {
	case json.Unmarshal(raw, &byID) == nil:
		for _, t := range byID {
			out = append(out, t.Title)
		}
	case json.Unmarshal(raw, &names) == nil:
		out = append(out, names...)
	}
	slices.Sort(out)
	return out
}

// checklistItemFields are what a checklist item keeps; the members' names and avatars and the
// attachments' URLs (which change from one read to the next) are not stored.
var checklistItemFields = []string{"ID", "TASK_ID", "PARENT_ID", "CREATED_BY", "TITLE", "SORT_INDEX", "IS_COMPLETE",
	"IS_IMPORTANT", "TOGGLED_BY", "TOGGLED_DATE", "MEMBERS", "ATTACHMENTS"}

// attachmentFields are what an attachment keeps: no download or view URL (they carry a token).
var attachmentFields = []string{"ATTACHMENT_ID", "NAME", "SIZE", "FILE_ID"}

func cleanChecklistItem(f map[string]json.RawMessage) {
	for k := range f {
		if !slices.Contains(checklistItemFields, k) {
			delete(f, k)
		}
	}
	var members []map[string]json.RawMessage
	_ = json.Unmarshal(f["MEMBERS"], &members) // [] or absent: none
	kept := make([]map[string]json.RawMessage, 0, len(members))
	for _, m := range members {
		kept = append(kept, keepFields(m, []string{"ID", "TYPE"}))
	}
	f["MEMBERS"] = engine.MustJSON(kept)
	f["ATTACHMENTS"] = engine.MustJSON(attachments(f["ATTACHMENTS"]))
}

// attachments reads attachments keyed by id ({} or [] when none) as a list in id order, without
// their URLs.
func attachments(raw json.RawMessage) []map[string]json.RawMessage {
	var byID map[string]map[string]json.RawMessage
	out := []map[string]json.RawMessage{}
	if json.Unmarshal(raw, &byID) != nil {
		return out
	}
	for _, id := range slices.SortedFunc(maps.Keys(byID), rest.CompareIDs) {
		out = append(out, keepFields(byID[id], attachmentFields))
	}
	return out
}

// checklistItems decodes a checklist record's items.
func checklistItems(f map[string]json.RawMessage) []map[string]json.RawMessage {
	var items []map[string]json.RawMessage
	_ = json.Unmarshal(f["items"], &items)
	return items
}

// checklistPeople lists the users a checklist names: authors, who toggled items, members.
func checklistPeople(f map[string]json.RawMessage) []string {
	var out []string
	for _, it := range checklistItems(f) {
		out = append(out, engine.Text(it, "CREATED_BY"), engine.Text(it, "TOGGLED_BY"))
		var members []map[string]json.RawMessage
		_ = json.Unmarshal(it["MEMBERS"], &members)
		for _, m := range members {
			out = append(out, engine.Text(m, "ID"))
		}
	}
	return slices.DeleteFunc(out, engine.None)
}

// checklistPayload is a task's checklist: its task as a target id and its items in id order, each
// naming its parent item by the portal's item id (null for a checklist's root), people as target
// ids.
func checklistPayload(r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	task, ok := rf.Target(Tasks, r.ParentSourceID)
	if !ok {
		return nil, &engine.UnresolvedError{Field: "task_id", Entity: Tasks, SourceID: r.ParentSourceID}
	}
	fields, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	users := rf.Of(Users)
	user := func(field, id string) (any, error) {
		if engine.None(id) {
			return nil, nil
		}
		t, ok := users[id]
		if !ok {
			return nil, &UnmappedUsersError{Field: field, Users: []string{id}}
		}
		return t, nil
	}
	items := []map[string]any{}
	for _, it := range checklistItems(fields) {
		createdBy, err := user("CREATED_BY", engine.Text(it, "CREATED_BY"))
		if err != nil {
			return nil, err
		}
		toggledBy, err := user("TOGGLED_BY", engine.Text(it, "TOGGLED_BY"))
		if err != nil {
			return nil, err
		}
		var members []map[string]json.RawMessage
		_ = json.Unmarshal(it["MEMBERS"], &members)
		people := []map[string]any{}
		for _, m := range members {
			u, err := user("MEMBERS", engine.Text(m, "ID"))
			if err != nil {
				return nil, err
			}
			people = append(people, map[string]any{"user_id": u, "type": engine.Text(m, "TYPE")})
		}
		var parent any
		if p := engine.Text(it, "PARENT_ID"); !engine.None(p) {
			parent = p
		}
		items = append(items, map[string]any{"id": engine.Text(it, "ID"), "parent_id": parent, "title": it["TITLE"],
			"sort_index": engine.Text(it, "SORT_INDEX"), "is_complete": engine.Text(it, "IS_COMPLETE") == "Y",
			"is_important": engine.Text(it, "IS_IMPORTANT") == "Y", "created_by": createdBy, "toggled_by": toggledBy,
			"toggled_date": it["TOGGLED_DATE"], "members": people, "attachments": it["ATTACHMENTS"]})
	}
	return engine.MustJSON(map[string]any{"task_id": task, "items": items}), nil
}

// oldCommentFields are what an old-card comment keeps: not the author's name and e-mail (the user
// is migrated), nor the HTML rendering, nor the attachments' URLs.
var oldCommentFields = []string{"ID", "AUTHOR_ID", "POST_DATE", "POST_MESSAGE", "ATTACHED_OBJECTS"}

func cleanTaskComment(f map[string]json.RawMessage) {
	for k := range f {
		if !slices.Contains(oldCommentFields, k) {
			delete(f, k)
		}
	}
	f["ATTACHED_OBJECTS"] = engine.MustJSON(attachments(f["ATTACHED_OBJECTS"]))
}

// taskCommentUsers lists the users a comment names: its author, whom it mentions, who liked it.
func taskCommentUsers(f map[string]json.RawMessage) []string {
	if _, ok := f["POST_MESSAGE"]; ok {
		return append([]string{engine.Text(f, "AUTHOR_ID")}, mentionsIn(f, "POST_MESSAGE")...)
	}
	return messageUsers(f)
}

// taskCommentPayload is a task comment in one shape for both card generations: its task, author
// and the users its BB-code text mentions as target ids, path "chat" (a message of the task's
// chat; system messages have no author) or "old_card" (task.commentitem.getlist), its date in
// the original offset, attachments as the portal lists them (ids, names, sizes), for chat
// messages also their params (likes translated) and files' metadata.
func taskCommentPayload(r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	task, ok := rf.Target(Tasks, r.ParentSourceID)
	if !ok {
		return nil, &engine.UnresolvedError{Field: "task_id", Entity: Tasks, SourceID: r.ParentSourceID}
	}
	fields, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	engine.LocalDates(fields, r.Dates)
	out := map[string]any{"task_id": task}
	if _, legacy := fields["POST_MESSAGE"]; legacy {
		author := engine.Text(fields, "AUTHOR_ID")
		t, ok := rf.Of(Users)[author]
		if !ok {
			return nil, &UnmappedUsersError{Field: "AUTHOR_ID", Users: []string{author}}
		}
		if err := translateTextFields(fields, rf.Of(Users), "POST_MESSAGE"); err != nil {
			return nil, err
		}
		out["path"], out["source_id"], out["author_id"], out["system"] = "old_card", engine.Text(fields, "ID"), t, false
		out["date"], out["text"], out["attachments"] = fields["POST_DATE"], fields["POST_MESSAGE"], fields["ATTACHED_OBJECTS"]
		return engine.MustJSON(out), nil
	}
	var msg struct {
		ChatID  json.RawMessage            `json:"chat_id"`
		Params  map[string]json.RawMessage `json:"params"`
		Files   json.RawMessage            `json:"files"`
		Replace json.RawMessage            `json:"replaces"`
	}
	_ = json.Unmarshal(r.Payload, &msg) // params is [] when empty: no params
	author := engine.Text(fields, "author_id")
	var authorID any
	if !engine.None(author) {
		t, ok := rf.Of(Users)[author]
		if !ok {
			return nil, &UnmappedUsersError{Field: "author_id", Users: []string{author}}
		}
		authorID = t
	}
	if err := translateTextFields(fields, rf.Of(Users), "text"); err != nil {
		return nil, err
	}
	params := msg.Params
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	if liked := likes(fields["params"]); len(liked) > 0 {
		mapped, missing := mapUsers(liked, rf.Of(Users))
		if len(missing) > 0 {
			return nil, &UnmappedUsersError{Field: "params.LIKE", Users: missing}
		}
		params["LIKE"] = engine.MustJSON(mapped)
	}
	files := msg.Files
	if len(files) == 0 {
		files = json.RawMessage("[]")
	}
	out["path"], out["source_id"], out["author_id"], out["system"] = "chat", engine.Text(fields, "id"), authorID, engine.None(author)
	out["date"], out["text"], out["params"], out["files"] = fields["date"], fields["text"], params, files
	return engine.MustJSON(out), nil
}

// verifyTasks adds the tasks' own figures to verify: how many tasks hold their comments in a chat
// and how many in the old card, the comments read by each path and the checklists. The engine
// names the custom fields the target cannot create (CustomFields.Creatable).
func verifyTasks(ctx context.Context, e engine.Env, ent *engine.Entity, r *engine.VerifyReport) error {
	if r.Details == nil {
		r.Details = map[string]int64{}
	}
	var chat, old int64
	chats, err := e.Store().FieldValues(ctx, Tasks, "chatId")
	if err != nil {
		return fmt.Errorf("verify tasks: %w", err)
	}
	for _, c := range chats {
		if engine.None(c.Value) {
			old++
		} else {
			chat++
		}
	}
	chatComments, _, err := e.Store().CountWithField(ctx, TaskComments, "chat_id")
	if err != nil {
		return fmt.Errorf("verify tasks: %w", err)
	}
	oldComments, _, err := e.Store().CountWithField(ctx, TaskComments, "POST_MESSAGE")
	if err != nil {
		return fmt.Errorf("verify tasks: %w", err)
	}
	_, checklists, err := e.Store().CountWithField(ctx, TaskChecklists, engine.UnreachableKey)
	if err != nil {
		return fmt.Errorf("verify tasks: %w", err)
	}
	r.Details["tasks_chat_card"], r.Details["tasks_old_card"] = chat, old
	r.Details["comments_chat_path"], r.Details["comments_old_card_path"] = chatComments, oldComments
	r.Details["checklists"] = checklists
	return nil
}
