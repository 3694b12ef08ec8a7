package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

const (
	// messagesLimit is im.dialog.messages.get's largest page; a shorter page is a chat's last.
	messagesLimit = 50
	// maxChain is how many pages of one chat a batch may chain when few chats are left: page
	// k+1 asks for the messages older than page k's 50th through a $result reference.
	maxChain = 8
)

// messageCursor is where the reading of one chat's messages stands, as the page log keeps it
// after the chat's key: "LAST_ID=84000" walking back (the messages older than it; 0: the
// newest), "FIRST_ID=84400" topping up (those newer than it).
type messageCursor struct {
	forward       bool
	before, after int64
}

func parseMessageCursor(at string) messageCursor {
	name, value, _ := strings.Cut(at, "=")
	n, _ := strconv.ParseInt(value, 10, 64)
	if name == "FIRST_ID" {
		return messageCursor{forward: true, after: n}
	}
	return messageCursor{before: n}
}

func (c messageCursor) text() string {
	if c.forward {
		return "FIRST_ID=" + strconv.FormatInt(c.after, 10)
	}
	return "LAST_ID=" + strconv.FormatInt(c.before, 10)
}

// chatKey is a chat's key in a messages walk, how the portal addresses it: "chat15".
func chatKey(chat int64) string { return "chat" + strconv.FormatInt(chat, 10) }

func chatOfKey(key string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(key, "chat"), 10, 64)
	return n
}

// messagesWalk is the KeyWalk of the messages of chats (im.dialog.messages.get, 50 behind a
// cursor) into the entity the walk runs for (chat_messages, task_comments), the chats walked in
// id order. parentOf gives a chat's parent record there (the chat, the task); lost records a chat
// that can no longer be read; newest is the newest message stored of each chat.
//
// A chat the pass has not read yet goes on from where an earlier pass was cut short; one read to
// its start before is topped up from its newest stored message; any other is read from its
// newest message back. With rescan every chat is read whole again, from the newest, to find
// edited messages by their hash. When few chats are left, a batch chains up to maxChain pages of
// a chat walking back: page k+1 asks for the messages older than page k's 50th through a $result
// reference (FIRST_ID's order is undocumented, so topping up is not chained).
func messagesWalk(chats []int64, parentOf func(chat int64) string, newest map[int64]int64, rescan bool,
	lost func(ctx context.Context, tx engine.Store, chat int64, u *engine.Unreachable, zone *time.Location) error) *engine.KeyWalk {
	chats = slices.Sorted(slices.Values(chats))
	keys := make([]string, len(chats))
	for i, c := range chats {
		keys[i] = chatKey(c)
	}
	params := func(key, cursor string) map[string]any {
		c := parseMessageCursor(cursor)
		p := map[string]any{"DIALOG_ID": key, "LIMIT": messagesLimit}
		if c.forward {
			p["FIRST_ID"] = c.after
		} else if c.before > 0 {
			p["LAST_ID"] = c.before
		}
		return p
	}
	return &engine.KeyWalk{
		Method: "im.dialog.messages.get",
		Keys:   func(context.Context, engine.Env) ([]string, error) { return keys, nil },
		Params: func(key, cursor string) any { return params(key, cursor) },
		From: func(key, last string) string {
			switch {
			case last != "" && last != "done" && !rescan:
				return last
			case !rescan && newest[chatOfKey(key)] > 0:
				return messageCursor{forward: true, after: newest[chatOfKey(key)]}.text()
			}
			return messageCursor{}.text()
		},
		Chain: maxChain,
		ChainParams: func(key, cursor, previous string) (any, bool) {
			if parseMessageCursor(cursor).forward {
				return nil, false
			}
			p := params(key, cursor) // older than the 50th (the oldest) message of the page before
			p["LAST_ID"] = rest.Ref(previous, "messages", strconv.Itoa(messagesLimit-1), "id")
			return p, true
		},
		Page: func(p engine.WalkPage) ([]engine.WalkRow, string, bool, error) {
			chat := chatOfKey(p.Key)
			rows, ids, err := decodeMessages(chat, parentOf(chat), p.Answer)
			if err != nil {
				return nil, "", false, err
			}
			c := parseMessageCursor(p.Cursor)
			if p.Chained && len(ids) > 0 && ids[len(ids)-1] >= c.before {
				return nil, "", false, engine.ErrChainBroken
			}
			switch {
			case c.forward && len(ids) > 0:
				c.after = ids[len(ids)-1]
			case !c.forward && len(ids) > 0:
				c.before = ids[0]
			}
			return rows, c.text(), len(ids) < messagesLimit, nil
		},
		Lost: func(ctx context.Context, tx engine.Store, key string, u *engine.Unreachable, zone *time.Location) error {
			return lost(ctx, tx, chatOfKey(key), u, zone)
		},
		// Only an edit changes a message the portal sends again.
		Reason: "changed on the source (edited)",
		NoMe:   true,
	}
}

// walkMessages reads the messages of every readable chat stored, resuming an interrupted pass
// chat by chat from the page log; rescan reads every history whole again. Otherwise a chat read
// to its start before whose last message (last, by chat, from the listing this pass) is stored
// is left out: it has nothing new to top up, and topping it up would cost a call for nothing.
// Edited messages are found by rescan only, as before.
func walkMessages(ctx context.Context, e engine.Env, rescan bool, last map[int64]int64, st *engine.GetStats) error {
	chats, err := storedChats(ctx, e.Store())
	if err != nil {
		return err
	}
	var readable []int64
	for _, ch := range chats {
		if ch.Unreachable == nil {
			readable = append(readable, ch.ID)
		}
	}
	newest, err := newestMessages(ctx, e.Store(), ChatMessages, "", func(chat string) (int64, error) {
		return strconv.ParseInt(chat, 10, 64)
	})
	if err != nil {
		return err
	}
	w := messagesWalk(readable, func(chat int64) string { return strconv.FormatInt(chat, 10) }, newest, rescan,
		func(ctx context.Context, tx engine.Store, chat int64, u *engine.Unreachable, zone *time.Location) error {
			return markUnreachable(ctx, e, tx, chat, u, zone)
		})
	if !rescan {
		w.Settled = func(key, at string) bool {
			chat := chatOfKey(key)
			return at == "done" && last[chat] > 0 && last[chat] <= newest[chat]
		}
	}
	// test_limit limits the chats, whose messages are all read.
	st.Pass, st.Resumed, err = w.Run(ctx, e, e.Entity(ChatMessages), st, 0)
	return err
}

// messagePage is the result of im.dialog.messages.get.
type messagePage struct {
	Messages []json.RawMessage `json:"messages"`
	Files    []json.RawMessage `json:"files"`
}

// fileFields are the metadata of an attached file a message keeps. The URLs are left out: they
// carry per-request signatures, change from one read to the next, and the files themselves are
// not migrated (docs/bitrix-chats.md).
var fileFields = []string{"id", "chatId", "date", "type", "name", "extension", "size", "image", "status", "authorId", "authorName"}

// decodeMessages turns a page of a chat's messages into rows of the parent record given, ids
// ascending. A message's payload is the message as the portal sent it, plus "files": the
// metadata of the files its FILE_ID names.
func decodeMessages(chat int64, parent string, r *rest.Response) ([]engine.WalkRow, []int64, error) {
	var page messagePage
	if err := r.Decode(&page); err != nil {
		return nil, nil, fmt.Errorf("messages of chat %d: %w", chat, err)
	}
	files := map[string]map[string]json.RawMessage{}
	for _, raw := range page.Files {
		f, err := engine.FieldsOf(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("files of chat %d: %w", chat, err)
		}
		kept := map[string]json.RawMessage{}
		for _, k := range fileFields {
			if v, ok := f[k]; ok {
				kept[k] = v
			}
		}
		files[engine.Text(f, "id")] = kept
	}
	rows := make([]engine.WalkRow, 0, len(page.Messages))
	ids := make([]int64, 0, len(page.Messages))
	for _, raw := range page.Messages {
		fields, err := engine.FieldsOf(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("message of chat %d: %w", chat, err)
		}
		id, err := strconv.ParseInt(engine.Text(fields, "id"), 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("message of chat %d without a numeric id: %.200s", chat, raw)
		}
		attached := []map[string]json.RawMessage{}
		for _, f := range fileIDs(fields["params"]) {
			if meta, ok := files[f]; ok {
				attached = append(attached, meta)
			}
		}
		fields["files"] = engine.MustJSON(attached)
		rows = append(rows, engine.WalkRow{SourceID: parent + ":" + strconv.FormatInt(id, 10), Parent: parent, Payload: engine.MustJSON(fields)})
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return rows, ids, nil
}

// fileIDs returns the ids in a message's params.FILE_ID; params is {} or [] when empty.
func fileIDs(params json.RawMessage) []string {
	var p struct {
		FileID []rest.ID `json:"FILE_ID"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	out := make([]string, len(p.FileID))
	for i, id := range p.FileID {
		out[i] = id.String()
	}
	return out
}

// markUnreachable records that a chat can no longer be read: its payload gets the refusal, so
// it changes (back to NEW), and it moves on to IMPORT_ERR with the reason.
func markUnreachable(ctx context.Context, e engine.Env, tx engine.Store, chat int64, u *engine.Unreachable, zone *time.Location) error {
	id := strconv.FormatInt(chat, 10)
	rec, err := tx.Record(ctx, Chats, id)
	if err != nil {
		return err
	}
	row, err := decodeChatRow(rec.Payload)
	if err != nil {
		return err
	}
	row.Unreachable = u
	payload := engine.MustJSON(row)
	fields, err := engine.FieldsOf(payload)
	if err != nil {
		return err
	}
	in, err := engine.NewIncoming(e.Entity(Chats), id, "", payload, fields, zone)
	if err != nil {
		return err
	}
	e.Log().Warn("chat no longer readable", "entity", Chats, "source_id", id, "reason", refusal(u))
	_, err = e.SavePage(ctx, tx, engine.Page{Records: []engine.EntityRecords{{Ent: e.Entity(Chats),
		Recs: []engine.Incoming{in.WithRefusal(refusal(u))}}}, Reason: "no longer readable", Unread: true})
	return err
}

// newestMessages returns the newest message stored of every chat, by chat id: the messages of
// child (whose payload has field, when not empty), their parent's source id turned into the
// chat's id by chatOf.
func newestMessages(ctx context.Context, st engine.Store, child, field string, chatOf func(parent string) (int64, error)) (map[int64]int64, error) {
	byParent, err := st.NewestBySeq(ctx, child, field)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(byParent))
	for parent, seq := range byParent {
		chat, err := chatOf(parent)
		if err != nil {
			return nil, fmt.Errorf("%s of %s: %w", child, parent, err)
		}
		out[chat] = seq
	}
	return out, nil
}
