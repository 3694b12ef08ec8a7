package bitrixfake

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// The chat (IM) side of the portal. Like users and groups, chats and their
// messages come from the seed: New builds the chat table, messages are
// generated from their IDs when asked for, and only what tests change
// (edits, added messages, people joining or leaving) is stored.
//
// What is modelled, from research/bitrix.md §5.3, the server's im_rest.php
// and Bitrix\Im\Chat::getMessages:
//
//   - message IDs are one sequence for the whole portal, so a chat's IDs
//     ascend with gaps, and dates grow with IDs;
//   - im.dialog.messages.get walks back with LAST_ID (ORDER BY ID DESC,
//     newest first) and forward with FIRST_ID (no ORDER BY: oldest first);
//     FIRST_ID wins over LAST_ID; LIMIT defaults to 20 and is cut to 50;
//   - im.recent.list pages over internal records and then collapses them to
//     unique dialogs, so pages overlap; its next is OFFSET plus the items
//     returned, which re-reads records, while OFFSET advanced by LIMIT does
//     not (the docs' advice);
//   - a user outside a chat gets 403 ACCESS_ERROR from im.dialog.messages.get
//     and from im.chat.get with DIALOG_ID, but an empty list, not an error,
//     from im.chat.user.list; im.chat.get by ENTITY_TYPE/ENTITY_ID checks
//     nothing and answers null for an unknown entity;
//   - open chats are readable by everyone; Open Channel guests are users that
//     user.get does not return.

const (
	kindChat uint64 = kindGroup + 1 + iota
	kindMessage
)

// chatKind is what sort of chat a chat is.
type chatKind int

const (
	chatPrivate   chatKind = iota // a 1:1 dialog
	chatGroup                     // a group chat
	chatOpen                      // an open chat, readable by everyone
	chatTask                      // a task's chat
	chatWorkgroup                 // a workgroup's chat
	chatOpenLine                  // an Open Channel conversation with a guest
)

// chatKinds gives each kind's type, message_type and entity_type as the
// portal shows them (fixtures im.recent.list.json, im.recent.get.json,
// im.search.chat.list.json, im.dialog.get.json).
var chatKinds = [...]struct{ typ, messageType, entityType string }{
	chatPrivate:   {"private", "P", ""},
	chatGroup:     {"chat", "C", ""},
	chatOpen:      {"open", "O", ""},
	chatTask:      {"tasksTask", "X", "TASKS_TASK"},
	chatWorkgroup: {"sonetGroup", "C", "SONET_GROUP"},
	chatOpenLine:  {"lines", "L", "LINES"},
}

// chat is a generated chat.
type chat struct {
	id    int
	index int // its place in the interleaving of message IDs
	kind  chatKind
	title string
	color string
	owner int
	// people speak in the generated history: the participants as
	// generated (for a workgroup chat, the group's members, dismissed ones
	// included); the current participants are computed by members.
	people   []int
	guest    int // Open Channel chats: the external user
	groupID  int // workgroup chats
	entityID string
	// dup > 0 gives the dialog a second record in the recent list, dup
	// places below its first: the cause of overlapping pages.
	dup int
}

// imState is the chat table and what tests changed.
type imState struct {
	chats    []*chat // ascending ID
	byID     map[int]*chat
	byEntity map[string]*chat // "SONET_GROUP|12"
	guests   map[int]string   // guest user ID -> name
	// Generated message k of the chat at index i has the ID
	// first + k*len(chats) + i; step is the time between two IDs.
	first, perChat int
	start          time.Time
	step           time.Duration
	next           int           // the ID the next added message gets
	added          map[int][]int // chat ID -> IDs of added messages
	addedMsgs      map[int]message
	edits          map[int]string
	joined         map[int][]int // chat ID -> users added by tests
	left           map[[2]int]bool
}

var (
	chatColors = []string{"#df532d", "#4ba984", "#1eb4aa", "#ab7761", "#f76187", "#58cc47", "#3e99ce", "#7f6ec1"}
	chatTopics = []string{"Планёрка", "Запуск сайта", "Отчётность", "Корпоратив", "Договоры", "Закупка оборудования",
		"Новый офис", "Интеграция с 1С", "Поддержка клиентов", "Маркетинг Q3", "Найм", "Релиз 2.0"}
	taskTitles = []string{"Подготовить коммерческое предложение", "Обновить прайс-лист", "Провести инвентаризацию",
		"Согласовать договор поставки", "Исправить ошибку в отчёте", "Настроить рассылку", "Собрать обратную связь"}
)

// me is the webhook's user, the one whose chats the portal shows.
func (p *Portal) me() int { return intval(p.opts.UserID) }

// initIM builds the chat table: Options.Chats chats of the webhook's user,
// Options.OpenLines Open Channel conversations, then one chat per group.
func (p *Portal) initIM() {
	s := &p.im
	*s = imState{
		byID: map[int]*chat{}, byEntity: map[string]*chat{}, guests: map[int]string{},
		perChat: p.opts.MessagesPerChat, added: map[int][]int{}, addedMsgs: map[int]message{},
		edits: map[int]string{}, joined: map[int][]int{}, left: map[[2]int]bool{},
	}
	if s.perChat <= 0 {
		s.perChat = 20
	}
	p.registerIM()
	if len(p.allUsers) == 0 {
		return
	}
	me := p.me()
	r := rand.New(rand.NewPCG(p.opts.Seed, kindChat))
	others := slices.DeleteFunc(slices.Clone(p.allUsers), func(id int) bool { return id == me })
	partners := slices.Clone(others)
	r.Shuffle(len(partners), func(i, j int) { partners[i], partners[j] = partners[j], partners[i] })

	add := func(c *chat) {
		c.index = len(s.chats)
		c.color = chatColors[r.IntN(len(chatColors))]
		if r.IntN(10) == 0 {
			c.dup = 1 + r.IntN(3)
		}
		s.chats = append(s.chats, c)
	}
	draw := func(n int) []int { // me and n others, distinct
		people := []int{me}
		for len(people) < 1+min(n, len(others)) {
			if u := others[r.IntN(len(others))]; !slices.Contains(people, u) {
				people = append(people, u)
			}
		}
		return people
	}
	for i := range p.opts.Chats {
		roll := r.IntN(100)
		switch {
		case roll < 40 && len(partners) > 0:
			partner := partners[0]
			partners = partners[1:]
			add(&chat{kind: chatPrivate, owner: 0, people: []int{me, partner}})
		case roll < 82:
			kind, size := chatGroup, 2+r.IntN(10)
			if roll >= 75 {
				kind, size = chatOpen, 3+r.IntN(17)
			}
			people := draw(size)
			title := pick(r, chatTopics)
			if r.IntN(3) == 0 {
				title += " " + strconv.Itoa(2024+r.IntN(3))
			}
			add(&chat{kind: kind, title: title, owner: people[r.IntN(len(people))], people: people})
		default:
			people := draw(1 + r.IntN(4))
			r.Shuffle(len(people), func(i, j int) { people[i], people[j] = people[j], people[i] })
			add(&chat{kind: chatTask, title: pick(r, taskTitles), owner: people[0], people: people,
				entityID: strconv.Itoa(8001 + 3*i)})
		}
	}
	nextGuest := p.allUsers[len(p.allUsers)-1] + 1
	for i := range p.opts.OpenLines {
		guest := nextGuest + i
		first, last := pick(r, femaleNames), pick(r, lastNames)
		name := first.ru + " " + last.ru + "а"
		if r.IntN(2) == 0 {
			first = pick(r, maleNames)
			name = first.ru + " " + last.ru
		}
		s.guests[guest] = name
		add(&chat{kind: chatOpenLine, title: name + " - Открытая линия", owner: 0, people: []int{me, guest},
			guest: guest, entityID: fmt.Sprintf("telegrambot|1|%d|%d", 700000000+37*i, guest)})
	}
	for _, g := range p.groups {
		var people []int
		for _, m := range p.groupMembers(g) {
			people = append(people, m.userID)
		}
		row := p.groupRow(g, len(people))
		name, _ := row.get("NAME")
		project, _ := row.get("PROJECT")
		title := fmt.Sprintf("Группа: %q", name)
		if project == "Y" {
			title = fmt.Sprintf("Проект: %q", name)
		}
		owner := 0
		if len(people) > 0 {
			owner = people[0]
		}
		add(&chat{kind: chatWorkgroup, title: title, owner: owner, people: people, groupID: g,
			entityID: strconv.Itoa(g)})
	}

	ids := generateIDs(len(s.chats), 8)
	for i, c := range s.chats {
		c.id = ids[i] + 1 // chat 1 is the portal's general chat, which the fake leaves out
		s.byID[c.id] = c
		if k := chatKinds[c.kind].entityType; k != "" {
			s.byEntity[k+"|"+c.entityID] = c
		}
	}
	s.first = 1001
	s.next = s.first + s.perChat*len(s.chats)
	// Two years of history, at least a second between two messages.
	s.step = max(time.Second, 2*365*24*time.Hour/time.Duration(max(1, s.next-s.first)))
	s.start = time.Date(2026, 3, 2, 9, 0, 0, 0, p.opts.Location).Add(-time.Duration(s.next-s.first) * s.step)
}

// members returns a chat's current participants, ascending: as generated
// (for a workgroup chat, the group's active members), with the changes
// tests made.
func (p *Portal) chatMembers(c *chat) []int {
	var out []int
	if c.kind == chatWorkgroup {
		for _, m := range p.members(c.groupID, true) {
			out = append(out, m.userID)
		}
	} else {
		out = slices.Clone(c.people)
	}
	out = append(out, p.im.joined[c.id]...)
	out = slices.DeleteFunc(out, func(u int) bool { return p.im.left[[2]int{c.id, u}] })
	slices.Sort(out)
	return slices.Compact(out)
}

// canRead is Dialog::hasAccess: participants read a chat, and everyone
// reads an open chat.
func (p *Portal) canRead(c *chat, user int) bool {
	return c.kind == chatOpen || slices.Contains(p.chatMembers(c), user)
}

// messageIDs returns a chat's message IDs, ascending.
func (p *Portal) messageIDs(c *chat) []int {
	n := len(p.im.chats)
	ids := make([]int, 0, p.im.perChat+len(p.im.added[c.id]))
	for k := range p.im.perChat {
		ids = append(ids, p.im.first+k*n+c.index)
	}
	return append(ids, p.im.added[c.id]...)
}

// lastMessageID returns the ID of a chat's newest message.
func (p *Portal) lastMessageID(c *chat) int {
	if added := p.im.added[c.id]; len(added) > 0 {
		return added[len(added)-1]
	}
	return p.im.first + (p.im.perChat-1)*len(p.im.chats) + c.index
}

// Chat describes a chat as tests need to know it.
type Chat struct {
	ID int
	// Type is the portal's chat type: private, chat, open, tasksTask,
	// sonetGroup or lines.
	Type string
	// EntityType and EntityID are what im.chat.get finds it by, like
	// SONET_GROUP and a group ID; empty for plain chats.
	EntityType, EntityID string
	// Members are the current participants, ascending.
	Members []int
	// MessageIDs are the chat's messages, ascending.
	MessageIDs []int
}

func (p *Portal) describe(c *chat) Chat {
	return Chat{ID: c.id, Type: chatKinds[c.kind].typ, EntityType: chatKinds[c.kind].entityType,
		EntityID: c.entityID, Members: p.chatMembers(c), MessageIDs: p.messageIDs(c)}
}

// Chats returns every chat of the portal, ascending by ID, including those
// the webhook's user cannot read.
func (p *Portal) Chats() []Chat {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Chat, len(p.im.chats))
	for i, c := range p.im.chats {
		out[i] = p.describe(c)
	}
	return out
}

// ErrNoSuchChat and ErrNoSuchMessage are returned by the chat hooks for
// an ID the portal does not have.
var (
	ErrNoSuchChat    = errors.New("bitrixfake: no such chat")
	ErrNoSuchMessage = errors.New("bitrixfake: no such message")
)

// EditMessage changes a message's text as its author editing it would: it
// keeps its ID and date, and later reads show the new text with
// IS_EDITED=Y in its params.
func (p *Portal) EditMessage(id int, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.findMessage(id); !ok {
		return fmt.Errorf("edit message %d: %w", id, ErrNoSuchMessage)
	}
	p.im.edits[id] = text
	return nil
}

// AddMessage posts a message to a chat: it gets the next message ID of the
// portal and takes the chat to the top of the recent list. It returns the
// new message's ID.
func (p *Portal) AddMessage(chatID, authorID int, text string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.im.byID[chatID]
	if c == nil {
		return 0, fmt.Errorf("add message to chat %d: %w", chatID, ErrNoSuchChat)
	}
	id := p.im.next
	p.im.next++
	p.im.added[chatID] = append(p.im.added[chatID], id)
	p.im.addedMsgs[id] = message{id: id, chatID: chatID, author: authorID, date: p.im.dateOf(id, nil), text: text,
		uuid: fmt.Sprintf("00000000-0000-4000-8000-%012d", id)}
	return id, nil
}

// AddChatUser makes a user a participant of a chat.
func (p *Portal) AddChatUser(chatID, userID int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.im.byID[chatID]
	if c == nil {
		return fmt.Errorf("add user %d to chat %d: %w", userID, chatID, ErrNoSuchChat)
	}
	delete(p.im.left, [2]int{chatID, userID})
	if !slices.Contains(p.chatMembers(c), userID) {
		p.im.joined[chatID] = append(p.im.joined[chatID], userID)
	}
	return nil
}

// RemoveChatUser takes a user out of a chat; for the webhook's user that
// makes the chat unreadable (unless it is an open chat) and drops it from
// the recent list.
func (p *Portal) RemoveChatUser(chatID, userID int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.im.byID[chatID] == nil {
		return fmt.Errorf("remove user %d from chat %d: %w", userID, chatID, ErrNoSuchChat)
	}
	p.im.left[[2]int{chatID, userID}] = true
	return nil
}
