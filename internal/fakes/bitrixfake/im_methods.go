package bitrixfake

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The im.* methods. Error texts and statuses are the server's
// (im_rest.php) and the docs' (fixtures *.error.json).

func (p *Portal) registerIM() {
	p.handlers["im.recent.list"] = p.recentList
	p.handlers["im.dialog.messages.get"] = p.dialogMessagesGet
	p.handlers["im.chat.user.list"] = p.chatUserList
	p.handlers["im.chat.get"] = p.chatGet
	p.handlers["im.dialog.get"] = p.dialogGet
}

var (
	errDialogIDEmpty = fail(http.StatusBadRequest, "DIALOG_ID_EMPTY", "Dialog ID can't be empty")
	errChatIDEmpty   = fail(http.StatusBadRequest, "CHAT_ID_EMPTY", "Chat ID can't be empty")
	errDialogAccess  = fail(http.StatusForbidden, "ACCESS_ERROR", "You do not have access to the specified dialog")
	chatDialogID     = regexp.MustCompile(`^chat(\d+)$`)
	userDialogID     = regexp.MustCompile(`^\d+$`)
)

// dialog resolves DIALOG_ID (chat<ID>, or a user ID for the 1:1 dialog with
// that user; the undocumented CHAT_ID as well) and checks the webhook's
// user may read it, as Common::isDialogId and Dialog::hasAccess do.
func (p *Portal) dialog(params map[string]any) (*chat, answer, bool) {
	v, ok := param(params, "DIALOG_ID")
	if !ok {
		if id, has := param(params, "CHAT_ID"); has {
			v, ok = "chat"+strconv.Itoa(intval(id)), true
		}
	}
	s := strings.TrimSpace(strval(v))
	var c *chat
	switch {
	case !ok || s == "":
		return nil, errDialogIDEmpty, false
	case chatDialogID.MatchString(s):
		id, _ := strconv.Atoi(chatDialogID.FindStringSubmatch(s)[1])
		c = p.im.byID[id]
	case userDialogID.MatchString(s):
		c = p.privateChatWith(intval(s))
	default:
		return nil, errDialogIDEmpty, false
	}
	if c == nil || !p.canRead(c, p.me()) {
		return nil, errDialogAccess, false
	}
	return c, answer{}, true
}

func (p *Portal) privateChatWith(user int) *chat {
	for _, c := range p.im.chats {
		if c.kind == chatPrivate && slices.Contains(c.people, user) && user != p.me() {
			return c
		}
	}
	return nil
}

// cursorParam reads FIRST_ID or LAST_ID: absent, a number, or an error for
// a string that is not one (FIRST_ID_STRING, LAST_ID_STRING).
func cursorParam(params map[string]any, name string) (int, bool, *answer) {
	v, ok := param(params, name)
	if !ok {
		return 0, false, nil
	}
	if s, isString := v.(string); isString && strings.TrimSpace(s) != "" {
		if _, err := strconv.Atoi(strings.TrimSpace(s)); err != nil {
			first, _, _ := strings.Cut(name, "_")
			a := fail(http.StatusBadRequest, name+"_STRING", strings.ToUpper(first[:1])+strings.ToLower(first[1:])+" ID can't be string")
			return 0, true, &a
		}
	}
	return intval(v), true, nil
}

// dialogMessagesGet is im.dialog.messages.get: newest first below LAST_ID,
// or oldest first above FIRST_ID; LIMIT 20 by default, 50 at most.
func (p *Portal) dialogMessagesGet(params map[string]any) answer {
	c, refusal, ok := p.dialog(params)
	if !ok {
		return refusal
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
	ids := p.messageIDs(c)
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

	messages := make([]object, 0, len(page))
	users := []object{}
	files := []object{}
	seen := map[int]bool{}
	for _, id := range page {
		m, _ := p.findMessage(id)
		messages = append(messages, p.render(m))
		if m.author != 0 && !seen[m.author] {
			seen[m.author] = true
			users = append(users, p.imUser(m.author))
		}
		for _, f := range m.files {
			files = append(files, p.file(f, m))
		}
	}
	result := object{{"chat_id", c.id}, {"messages", messages}, {"users", users}, {"files", files}}
	return answer{result: result, cost: p.opts.CallCost + time.Duration(len(page))*p.opts.RowCost}
}

// chatUserList is im.chat.user.list: the participants' IDs, or an empty
// list for a user who may not see them.
func (p *Portal) chatUserList(params map[string]any) answer {
	v, _ := param(params, "CHAT_ID")
	id := intval(v)
	if d, ok := param(params, "DIALOG_ID"); ok {
		m := chatDialogID.FindStringSubmatch(strval(d))
		if m == nil {
			return errDialogIDEmpty
		}
		id, _ = strconv.Atoi(m[1])
	}
	if id <= 0 {
		return errChatIDEmpty
	}
	c := p.im.byID[id]
	if c == nil || !slices.Contains(p.chatMembers(c), p.me()) {
		return answer{result: []int{}, cost: p.opts.CallCost}
	}
	members := p.chatMembers(c)
	return answer{result: members, cost: p.opts.CallCost + time.Duration(len(members))*p.opts.RowCost}
}

// chatGet is im.chat.get: by DIALOG_ID the chat's card (participants
// only); by ENTITY_TYPE and ENTITY_ID just {"ID": n}, for anyone, or null.
func (p *Portal) chatGet(params map[string]any) answer {
	if _, ok := param(params, "DIALOG_ID"); ok {
		return p.dialogGet(params)
	}
	entityType, _ := param(params, "ENTITY_TYPE")
	entityID, _ := param(params, "ENTITY_ID")
	var result any
	if phpBool(entityType) && phpBool(entityID) {
		if c := p.im.byEntity[strval(entityType)+"|"+strval(entityID)]; c != nil {
			result = object{{"ID", c.id}}
		}
	}
	return answer{result: result, cost: p.opts.CallCost}
}

// dialogGet is im.dialog.get (and im.chat.get with DIALOG_ID): the chat's
// card, as in fixture im.dialog.get.json.
func (p *Portal) dialogGet(params map[string]any) answer {
	c, refusal, ok := p.dialog(params)
	if !ok {
		return refusal
	}
	card := p.chatCard(c, false)
	last := p.lastMessageID(c)
	managers := []int{}
	if c.owner != 0 {
		managers = append(managers, c.owner)
	}
	card.set("description", "")
	card.set("counter", 0)
	card.set("message_count", len(p.messageIDs(c)))
	card.set("unread_id", 0)
	card.set("last_message_id", last)
	card.set("last_id", last)
	card.set("marked_id", 0)
	card.set("disk_folder_id", 0)
	card.set("is_new", false)
	card.set("readed_list", []any{})
	card.set("manager_list", managers)
	card.set("last_message_views", object{{"message_id", last}, {"first_viewers", []any{}}, {"count_of_viewers", 0}})
	card.set("dialog_id", "chat"+strconv.Itoa(c.id))
	return answer{result: card, cost: p.opts.CallCost}
}

// chatCard is the "chat" object of a chat: as in im.recent.list items
// (role in capitals) or im.dialog.get (role in lower case).
func (p *Portal) chatCard(c *chat, recent bool) object {
	k := chatKinds[c.kind]
	members := p.chatMembers(c)
	role := "member"
	if c.owner == p.me() {
		role = "owner"
	}
	if recent {
		role = strings.ToUpper(role)
	}
	link := object{{"type", ""}, {"url", ""}, {"id", ""}}
	restrictions := object{{"avatar", true}, {"rename", true}, {"extend", true}, {"call", true}, {"mute", true},
		{"leave", true}, {"leave_owner", true}, {"send", true}, {"user_list", true}}
	switch c.kind {
	case chatTask:
		link = object{{"type", "TASKS"}, {"url", "/company/personal/user/" + strconv.Itoa(c.owner) + "/tasks/task/view/" + c.entityID + "/"}, {"id", c.entityID}}
	case chatWorkgroup:
		link = object{{"type", "SONET_GROUP"}, {"url", "/workgroups/group/" + c.entityID + "/"}, {"id", c.entityID}}
		restrictions = object{{"avatar", false}, {"rename", false}, {"extend", false}, {"call", true}, {"mute", true},
			{"leave", false}, {"leave_owner", false}, {"send", true}, {"user_list", true}}
	}
	if !recent {
		restrictions.set("path", "")
		restrictions.set("path_title", "")
	}
	managers := []int{}
	if c.owner != 0 {
		managers = append(managers, c.owner)
	}
	return object{
		{"id", c.id},
		{"parent_chat_id", 0},
		{"parent_message_id", 0},
		{"name", c.title},
		{"owner", c.owner},
		{"extranet", c.kind == chatOpenLine},
		{"contains_collaber", false},
		{"avatar", ""},
		{"color", c.color},
		{"type", k.typ},
		{"entity_type", k.entityType},
		{"entity_id", c.entityID},
		{"entity_data_1", ""},
		{"entity_data_2", ""},
		{"entity_data_3", ""},
		{"mute_list", []any{}},
		{"manager_list", managers},
		{"date_create", p.isoDate(p.im.dateOf(p.messageIDs(c)[0], nil).Add(-time.Minute))},
		{"message_type", k.messageType},
		{"user_counter", len(members)},
		{"restrictions", restrictions},
		{"role", role},
		{"text_field_enabled", true},
		{"background_id", nil},
		{"entity_link", link},
		{"permissions", object{{"manage_users_add", "member"}, {"manage_users_delete", "manager"},
			{"manage_ui", "member"}, {"manage_settings", "owner"}, {"manage_messages", "member"}, {"can_post", "member"}}},
		{"public", ""},
	}
}

// recentList is im.recent.list: the webhook user's dialogs, most recently
// active first. A page is LIMIT internal records from OFFSET collapsed to
// unique dialogs, so a dialog with two records can show on two pages.
func (p *Portal) recentList(params map[string]any) answer {
	skip := func(name string) bool { v, _ := param(params, name); return strval(v) == "Y" }
	var before time.Time
	if v, ok := param(params, "LAST_MESSAGE_DATE"); ok {
		before, _ = time.Parse(time.RFC3339, strval(v))
	}
	me := p.me()
	var dialogs []*chat
	for _, c := range p.im.chats {
		switch {
		case !slices.Contains(p.chatMembers(c), me),
			c.kind == chatOpenLine && skip("SKIP_OPENLINES"),
			c.kind == chatPrivate && skip("SKIP_DIALOG"),
			c.kind != chatPrivate && skip("SKIP_CHAT"):
			continue
		}
		if !before.IsZero() {
			last, _ := p.findMessage(p.lastMessageID(c))
			if !last.date.Before(before) {
				continue
			}
		}
		dialogs = append(dialogs, c)
	}
	slices.SortFunc(dialogs, func(a, b *chat) int { return p.lastMessageID(b) - p.lastMessageID(a) })
	records := withDuplicates(dialogs)

	offset := 0
	if v, ok := param(params, "OFFSET"); ok {
		offset = max(0, intval(v))
	} else {
		offset = max(0, startParam(params))
	}
	limit := 50
	if v, ok := param(params, "LIMIT"); ok && intval(v) > 0 {
		limit = min(intval(v), 200)
	}
	items := []object{}
	seen := map[int]bool{}
	for _, c := range records[min(offset, len(records)):min(offset+limit, len(records))] {
		if !seen[c.id] {
			seen[c.id] = true
			items = append(items, p.recentItem(c))
		}
	}
	hasMore := offset+limit < len(records)
	result := object{
		{"items", items},
		{"hasMorePages", hasMore},
		{"hasMore", hasMore},
		{"copilot", object{{"chats", nil}, {"messages", nil}, {"roles", []any{}}, {"recommendedRoles", []any{}}}},
		{"messagesAutoDeleteConfigs", []any{}},
	}
	total := -1
	a := answer{result: result, total: &total, cost: p.opts.CallCost + time.Duration(len(items))*p.opts.RowCost}
	if hasMore {
		next := offset + len(items)
		a.next = &next
	}
	return a
}

// withDuplicates lays the recent list's internal records out: each
// dialog's record, and for some a second one a few places further down.
func withDuplicates(dialogs []*chat) []*chat {
	records := make([]*chat, 0, len(dialogs)+len(dialogs)/8)
	later := map[int][]*chat{}
	for i, c := range dialogs {
		records = append(records, c)
		records = append(records, later[i]...)
		delete(later, i)
		if c.dup > 0 {
			later[i+c.dup] = append(later[i+c.dup], c)
		}
	}
	for i := len(dialogs); len(later) > 0; i++ {
		records = append(records, later[i]...)
		delete(later, i)
	}
	return records
}

// recentItem is one dialog of im.recent.list (fixture im.recent.list.json):
// a 1:1 dialog is keyed by the other user's ID, a chat by "chat<ID>".
func (p *Portal) recentItem(c *chat) object {
	last, _ := p.findMessage(p.lastMessageID(c))
	date := p.isoDate(last.date)
	var uuid any
	if last.uuid != "" {
		uuid = last.uuid
	}
	msg := object{{"id", last.id}, {"text", last.text}, {"file", len(last.files) > 0}, {"author_id", last.author},
		{"attach", false}, {"sticker", nil}, {"date", date}, {"status", "received"}, {"uuid", uuid}}

	var id any = "chat" + strconv.Itoa(c.id)
	typ, title := "chat", c.title
	var user, card object
	if c.kind == chatPrivate {
		partner := c.people[1]
		id, typ, title = partner, "user", p.displayName(partner)
		user = p.imUser(partner)
		card = object{{"text_field_enabled", true}, {"background_id", nil}, {"mute_list", []any{}}}
	} else {
		card = p.chatCard(c, true)
		user = object{{"id", 0}}
		if last.author != 0 {
			user = p.imUser(last.author)
		}
	}
	item := object{
		{"id", id},
		{"chat_id", c.id},
		{"type", typ},
		{"avatar", object{{"url", ""}, {"color", c.color}}},
		{"title", title},
		{"message", msg},
		{"counter", 0},
		{"last_id", last.id},
		{"pinned", false},
		{"unread", false},
		{"has_reminder", false},
		{"date_update", date},
		{"date_last_activity", date},
	}
	if c.kind == chatPrivate {
		item = append(item, field{"user", user}, field{"chat", card})
	} else {
		item = append(item, field{"chat", card}, field{"user", user})
	}
	return append(item, field{"options", []any{}})
}
