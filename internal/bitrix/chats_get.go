package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

const (
	// recentLimit is im.recent.list's largest page.
	recentLimit = 200
	// recentPagesPerBatch is how many recent-list pages one batch asks for once the first page
	// says there are more: their offsets do not depend on each other.
	recentPagesPerBatch = 10
)

// chatLister is the lister of chats and their messages (seed 002 "chats-get"): the chats of the
// webhook's user from im.recent.list and the workgroups' chats, with their participants; then
// every readable chat's messages, walked by a KeyWalk (messagesWalk), each chat's place kept in
// the page log. A chat that cannot be read is stored with the
// reason, in IMPORT_ERR. With TestLimit only the first TestLimit chats are read, with all their
// messages. rescan reads every chat's whole history again (ChatRescan).
type chatLister struct{ rescan bool }

func (l chatLister) Get(ctx context.Context, g *engine.GetRun) error {
	e, st := g.Env, g.Stats
	if _, err := e.Store().Inventory(ctx, Chats); err != nil { // creates the row startPass updates
		return err
	}
	inv, err := e.Store().StartPass(ctx, Chats, e.TestLimit())
	if err != nil {
		return err
	}
	rows, zone, err := findChats(ctx, e, inv.Pass)
	if err != nil {
		return err
	}
	if err := saveChats(ctx, e, rows, zone, st); err != nil {
		return err
	}
	c := st.Of(Chats)
	e.Log().Info("chats found", "entity", Chats, "chats", c.Rows, "new", c.Inserted, "changed", c.Changed,
		"unreachable", st.Unreachable)
	last := make(map[int64]int64, len(rows))
	for _, r := range rows {
		last[r.ID] = r.LastMessage
	}
	if err := walkMessages(ctx, e, l.rescan, last, st); err != nil {
		return fmt.Errorf("messages: %w", err)
	}
	st.Complete = true
	return nil
}

// Total is not known to the portal: no method counts every chat (verify counts those read,
// Entity.CountRead).
func (chatLister) Total(context.Context, engine.Env, *engine.Entity) (int64, error) {
	return 0, engine.ErrNoTotal
}

// Plan of chats: no method counts chats or messages, so the plan reads what get reads first
// (the recent list and the workgroups' chats, cheap: 200 chats a page) and asks every readable
// chat for its message count (im.dialog.get, 50 chats to a call). Before workgroups are read,
// it lists the portal's itself (planGroupIDs), as its own asking. Verify reads the recent list
// again and asks every readable chat for its count again.
func (l chatLister) Plan(ctx context.Context, e engine.Env, ent *engine.Entity) ([]engine.EntityPlan, error) {
	before := e.Requests()
	rows, _, err := recentChats(ctx, e, 0)
	if err != nil {
		return nil, err
	}
	recent := e.Requests() - before
	known := map[int64]bool{}
	for _, r := range rows {
		known[r.ID] = true
	}
	groups, fromPortal, err := planGroupIDs(ctx, e) // the ids get asks the workgroups' chats of
	if err != nil {
		return nil, err
	}
	mark := e.Requests()
	if len(groups) > 0 {
		more, err := chatsOfGroups(ctx, e, groups, known)
		if err != nil {
			return nil, err
		}
		rows = append(rows, more...)
	}
	if lim := e.TestLimit(); lim > 0 && len(rows) > lim {
		rows = rows[:lim]
	}
	if err := chatParticipants(ctx, e, rows); err != nil {
		return nil, err
	}
	listing := recent + e.Requests() - mark
	askedAhead := ""
	if a := e.PlanAhead(); a != nil {
		// A rerun's prefetch (Prefetch) asks the recent list's first page, the workgroups'
		// chats, and the participants of the list's readable chats and the cards of the others:
		// the pass asks again only what the portal refused (a card of a chat the webhook's user
		// is not in) and what follows from those.
		var readable, found, refused int
		for _, r := range rows {
			switch {
			case !known[r.ID] && r.Unreachable != nil:
				refused++
			case !known[r.ID]:
				found++
			case r.Unreachable == nil:
				readable++
			}
		}
		a.Ask(1, false, 1+len(groups))
		a.Ask(2, true, readable+found)
		listing = min(listing, int64(engine.CeilDiv(int64(refused), rest.MaxBatch)+engine.CeilDiv(int64(found), rest.MaxBatch)))
		askedAhead = "; a rerun's prefetch asks them, the pass only the refused workgroup chats' cards and the others' participants"
	}
	var readable []int64
	for _, c := range rows {
		if c.Unreachable == nil {
			readable = append(readable, c.ID)
		}
	}
	stored, err := e.Store().CountByParent(ctx, ChatMessages)
	if err != nil {
		return nil, err
	}
	var messages int64
	pages, toppedUp := 0, 0
	err = messageCounts(ctx, e, readable, func(chat string, count int64) {
		messages += count
		if had := stored[chat]; had > 0 && !l.rescan {
			// A chat read before is topped up from its newest stored message; one whose last
			// message is stored is not asked at all (walkMessages).
			toppedUp++
			if count = max(0, count-had); count == 0 {
				return
			}
		}
		pages += int(count/rest.PageSize) + 1 // the walk ends at its first short page
	}, func(string, *engine.Unreachable) {})
	if err != nil {
		return nil, err
	}
	messagesHow := "im.dialog.get message_count per readable chat; get reads 50 pages per call"
	messagesPass := "every readable chat's history is read"
	if toppedUp > 0 {
		messagesHow += fmt.Sprintf("; %d chats read before are topped up: only their messages not stored yet", toppedUp)
		messagesPass = "every readable chat is asked again, from its newest stored message"
	}
	how := "im.recent.list and the workgroups' chats, read as get reads them, with participants"
	if fromPortal {
		how += fmt.Sprintf(" (the %d workgroups listed by sonet_group.get: groups not read yet)", len(groups))
	}
	how += askedAhead
	return []engine.EntityPlan{
		{Entity: ent.Name, Records: int64(len(rows)), Calls: int(listing), How: how,
			VerifyCalls: int(recent) + engine.CeilDiv(int64(len(readable)), rest.MaxBatch)},
		{Entity: ChatMessages, Records: messages, Calls: engine.CeilDiv(int64(pages), rest.MaxBatch),
			How: messagesHow, Pass: engine.PassFull, PassReason: messagesPass},
	}, nil
}

// recentPage is the result of im.recent.list.
type recentPage struct {
	Items   []recentItem `json:"items"`
	HasMore bool         `json:"hasMore"`
}

// recentItem is one dialog of the recent list; id is the other user's id for a 1:1 dialog and
// "chat<ID>" for a chat.
type recentItem struct {
	ID     rest.ID  `json:"id"`
	ChatID rest.ID  `json:"chat_id"`
	Type   string   `json:"type"` // user or chat
	Title  string   `json:"title"`
	Chat   chatCard `json:"chat"`
	// Message is the dialog's last message ({"id": ...}; null, false or [] when it has none).
	Message json.RawMessage `json:"message"`
}

// chatCard is the part of a chat's description (recent item "chat", im.dialog.get) a chat
// record keeps. Ids arrive as numbers or strings.
type chatCard struct {
	ID          rest.ID `json:"id"`
	Name        string  `json:"name"`
	Owner       rest.ID `json:"owner"`
	Type        string  `json:"type"`
	MessageType string  `json:"message_type"`
	EntityType  string  `json:"entity_type"`
	EntityID    string  `json:"entity_id"`
	DateCreate  string  `json:"date_create"`
	// LastMessageID is im.dialog.get's last_message_id (absent from the recent item's card).
	LastMessageID json.RawMessage `json:"last_message_id"`
}

func (c chatCard) row(id int64) chatRow {
	owner, _ := c.Owner.Int64()
	return chatRow{ID: id, DialogID: "chat" + strconv.FormatInt(id, 10), Type: c.Type, MessageType: c.MessageType,
		Name: c.Name, Owner: owner, EntityType: c.EntityType, EntityID: c.EntityID, DateCreate: c.DateCreate,
		LastMessage: messageID(c.LastMessageID)}
}

// messageID reads a message id sent as a number or a string, or inside a message object
// ({"id": ...}); 0 for anything else (null, false, [] of a dialog without messages).
func messageID(raw json.RawMessage) int64 {
	var msg struct {
		ID rest.ID `json:"id"`
	}
	if json.Unmarshal(raw, &msg) == nil {
		raw = json.RawMessage(msg.ID.String())
	}
	var id rest.ID
	if json.Unmarshal(raw, &id) != nil {
		return 0
	}
	n, err := id.Int64()
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (it recentItem) row() (chatRow, error) {
	id, err := it.ChatID.Int64()
	if err != nil {
		return chatRow{}, fmt.Errorf("recent item %q: chat_id: %w", it.ID, err)
	}
	if it.Type == "user" { // a 1:1 dialog: the item describes the other user, not the chat
		return chatRow{ID: id, DialogID: it.ID.String(), Type: "private", MessageType: "P", Name: it.Title,
			LastMessage: messageID(it.Message)}, nil
	}
	row := it.Chat.row(id)
	row.LastMessage = max(row.LastMessage, messageID(it.Message))
	return row, nil
}

// findChats lists the chats to read: the recent list's, de-duplicated, then the workgroups'
// chats it does not have, each with its participants. It returns them in that order, and the
// portal's time zone.
func findChats(ctx context.Context, e engine.Env, pass int) ([]*chatRow, *time.Location, error) {
	rows, zone, err := recentChats(ctx, e, pass)
	if err != nil {
		return nil, nil, err
	}
	known := map[int64]bool{}
	for _, r := range rows {
		known[r.ID] = true
	}
	more, err := workgroupChats(ctx, e, known)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows, more...)
	if lim := e.TestLimit(); lim > 0 && len(rows) > lim {
		rows = rows[:lim]
	}
	if err := chatParticipants(ctx, e, rows); err != nil {
		return nil, nil, err
	}
	return rows, zone, nil
}

// recentChats reads the webhook user's recent list. The first page comes alone; if it says
// there is more, the following pages come recentPagesPerBatch at a time, OFFSET advancing by
// LIMIT as the docs advise (next, OFFSET plus the items returned, re-reads records). Pages
// overlap: a chat is kept once, where it first appears. Each page is logged in the chats
// pass given; pass 0 logs nothing (verify's look at the list).
func recentChats(ctx context.Context, e engine.Env, pass int) ([]*chatRow, *time.Location, error) {
	params := recentParams
	resp, err := e.Source().Call(ctx, "im.recent.list", params(0))
	if err != nil {
		return nil, nil, err
	}
	zone, err := e.Zone(resp)
	if err != nil {
		return nil, nil, err
	}
	var rows []*chatRow
	seen := map[int64]bool{}
	take := func(offset int, r *rest.Response) (bool, error) {
		var page recentPage
		if err := r.Decode(&page); err != nil {
			return false, fmt.Errorf("im.recent.list OFFSET %d: %w", offset, err)
		}
		for _, it := range page.Items {
			row, err := it.row()
			if err != nil {
				return false, err
			}
			if !seen[row.ID] {
				seen[row.ID] = true
				rows = append(rows, &row)
			}
		}
		next := "recent end"
		if page.HasMore {
			next = "recent OFFSET=" + strconv.Itoa(offset+recentLimit)
		}
		if pass == 0 {
			return page.HasMore, nil
		}
		_, err := e.SavePage(ctx, e.Store(), engine.Page{Log: []engine.PageLog{{Entity: Chats, Pages: []engine.PageRecord{{
			Pass: pass, Cursor: "recent OFFSET=" + strconv.Itoa(offset), Next: next, Count: len(page.Items)}}}}})
		return page.HasMore, err
	}
	more, err := take(0, resp)
	for offset := recentLimit; more && err == nil; offset += recentLimit * recentPagesPerBatch {
		cmds := make([]rest.Command, recentPagesPerBatch)
		for i := range cmds {
			cmds[i] = rest.Command{Key: "r" + strconv.Itoa(offset+i*recentLimit), Method: "im.recent.list",
				Params: params(offset + i*recentLimit)}
		}
		pages := map[string]*rest.Response{}
		err = e.BatchEach(ctx, cmds, func(key string, r *rest.Response) error {
			pages[key] = r
			return nil
		}, func(key string, err error) error { return fmt.Errorf("im.recent.list OFFSET %s: %w", key[1:], err) })
		for i := 0; more && i < len(cmds) && err == nil; i++ {
			more, err = take(offset+i*recentLimit, pages[cmds[i].Key])
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return rows, zone, nil
}

// workgroupChats finds the chats of the workgroups already read (im.chat.get by SONET_GROUP,
// which answers for any group, member or not) that are not among the known ones, and asks for
// each one's card: a chat the webhook's user is not in is refused (ACCESS_ERROR) and comes back
// marked unreachable.
func workgroupChats(ctx context.Context, e engine.Env, known map[int64]bool) ([]*chatRow, error) {
	groups, err := e.Store().SourceIDs(ctx, Groups)
	if err != nil {
		return nil, fmt.Errorf("list workgroups: %w", err)
	}
	if len(groups) == 0 {
		e.Log().Info("no workgroups read yet: only the recent list's chats are read", "entity", Chats)
		return nil, nil
	}
	return chatsOfGroups(ctx, e, groups, known)
}

// chatsOfGroups reads the chats of the workgroups groups that known does not hold.
func chatsOfGroups(ctx context.Context, e engine.Env, groups []string, known map[int64]bool) ([]*chatRow, error) {
	cmds := make([]rest.Command, len(groups))
	for i, g := range groups {
		cmds[i] = groupChatCommand(g)
	}
	groupOf := map[int64]string{}
	var found []int64
	err := e.BatchEachConcurrently(ctx, cmds, func(key string, r *rest.Response) error {
		var res *struct {
			ID rest.ID `json:"ID"`
		}
		if err := r.Decode(&res); err != nil {
			return fmt.Errorf("im.chat.get for workgroup %s: %w", key[1:], err)
		}
		if res == nil { // the group has no chat
			return nil
		}
		id, err := res.ID.Int64()
		if err != nil {
			return fmt.Errorf("im.chat.get for workgroup %s: %w", key[1:], err)
		}
		if !known[id] {
			groupOf[id] = key[1:]
			found = append(found, id)
		}
		return nil
	}, func(key string, err error) error { return fmt.Errorf("chat of workgroup %s: %w", key[1:], err) })
	if err != nil || len(found) == 0 {
		return nil, err
	}
	slices.Sort(found) // answers came in any order

	cmds = cmds[:0]
	for _, id := range found {
		cmds = append(cmds, dialogCommand(id))
	}
	byID := map[int64]*chatRow{}
	err = e.BatchEachConcurrently(ctx, cmds, func(key string, r *rest.Response) error {
		id, _ := strconv.ParseInt(key[1:], 10, 64)
		var card chatCard
		if err := r.Decode(&card); err != nil {
			return fmt.Errorf("im.dialog.get chat%d: %w", id, err)
		}
		row := card.row(id)
		byID[id] = &row
		return nil
	}, func(key string, err error) error {
		id, _ := strconv.ParseInt(key[1:], 10, 64)
		u, ok := engine.UnreachableFrom("im.dialog.get", err)
		if !ok {
			return fmt.Errorf("chat%d of workgroup %s: %w", id, groupOf[id], err)
		}
		byID[id] = &chatRow{ID: id, DialogID: "chat" + key[1:], Type: "sonetGroup", EntityType: "SONET_GROUP",
			EntityID: groupOf[id], Unreachable: u}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*chatRow, 0, len(found))
	for _, id := range found {
		out = append(out, byID[id])
	}
	return out, nil
}

// chatParticipants reads the participants of the readable chats, 50 chats per batch.
// im.chat.user.list answers an empty list, not an error, to someone who may not see them: for a
// chat that is readable that, or a refusal, leaves the participants unavailable.
func chatParticipants(ctx context.Context, e engine.Env, rows []*chatRow) error {
	byID := map[int64]*chatRow{}
	var cmds []rest.Command
	for _, r := range rows {
		if r.Unreachable == nil {
			byID[r.ID] = r
			cmds = append(cmds, participantsCommand(r.ID))
		}
	}
	rowOf := func(key string) *chatRow {
		id, _ := strconv.ParseInt(key[1:], 10, 64)
		return byID[id]
	}
	return e.BatchEachConcurrently(ctx, cmds, func(key string, r *rest.Response) error {
		row := rowOf(key)
		var ids []rest.ID
		if err := r.Decode(&ids); err != nil {
			return fmt.Errorf("im.chat.user.list %d: %w", row.ID, err)
		}
		row.Participants = make([]int64, 0, len(ids))
		for _, id := range ids {
			n, err := id.Int64()
			if err != nil {
				return fmt.Errorf("im.chat.user.list %d: %w", row.ID, err)
			}
			row.Participants = append(row.Participants, n)
		}
		slices.Sort(row.Participants)
		if len(ids) == 0 {
			row.ParticipantsUnavailable = "im.chat.user.list answered an empty list, which is how the portal says the webhook's user may not see them"
		}
		return nil
	}, func(key string, err error) error {
		if !rest.HasCode(err, "ACCESS_ERROR") {
			return fmt.Errorf("participants of chat %s: %w", key[1:], err)
		}
		row := rowOf(key)
		row.Participants = []int64{}
		row.ParticipantsUnavailable = "im.chat.user.list refused: " + err.Error()
		return nil
	})
}

// saveChats stores the chats found, 500 per transaction. Unreachable ones go to IMPORT_ERR with
// the reason; a chat that was unreachable and no longer is changes, and so is back in NEW.
func saveChats(ctx context.Context, e engine.Env, rows []*chatRow, zone *time.Location, st *engine.GetStats) error {
	for chunk := range slices.Chunk(rows, 500) {
		recs := make([]engine.Incoming, len(chunk))
		for i, r := range chunk {
			payload := engine.MustJSON(r)
			fields, err := engine.FieldsOf(payload)
			if err != nil {
				return err
			}
			id := strconv.FormatInt(r.ID, 10)
			if recs[i], err = engine.NewIncoming(e.Entity(Chats), id, "", payload, fields, zone); err != nil {
				return err
			}
			if r.Unreachable != nil {
				st.Unreachable++
				recs[i] = recs[i].WithRefusal(refusal(r.Unreachable))
			}
		}
		saved, err := e.SavePage(ctx, e.Store(), engine.Page{Records: []engine.EntityRecords{{Ent: e.Entity(Chats), Recs: recs}}})
		if err != nil {
			return err
		}
		saved.AddCounts(st)
	}
	return e.Store().FinishPass(ctx, Chats, int64(len(rows)))
}

// storedChats returns the chats stored, readable or not, in id order of their records.
func storedChats(ctx context.Context, st engine.Store) ([]chatRow, error) {
	payloads, err := st.Payloads(ctx, Chats)
	if err != nil {
		return nil, err
	}
	out := make([]chatRow, len(payloads))
	for i, p := range payloads {
		if out[i], err = decodeChatRow(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NoDelta makes chats a FullPassLister: no method lists a portal's chats by modification (the
// recent list is one user's, ordered by last message, and chats gain participants without
// showing it), so every pass reads the chat list and participants again; their messages are
// read incrementally (after the newest stored) and not at all for a chat whose last message
// is stored (docs/bitrix-delta.md).
func (chatLister) NoDelta() string {
	return "no method lists chats by modification and a participant change shows nowhere: the chats and their " +
		"participants are read each pass; messages only after the newest stored, of chats whose last message is new"
}

// Partial makes chats a PartialLister: im.recent.list shows only the chats the webhook's user
// is in, so a chat it left, or was removed from, drops out of the listing without being deleted.
func (chatLister) Partial() string {
	return "im.recent.list lists only the chats of the webhook's user: a chat missing from it may still exist"
}
