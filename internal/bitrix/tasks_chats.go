package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// taskChats is the Walker of the comments of new-card tasks: they are the messages of the task's
// chat (tasks.task.list's chatId), read by the chats' messages walk (messagesWalk) into
// task_comments, each chat's place in task_comments' page log. Later gets only top up a chat from
// its newest stored message, as for chats; rescan (ChatRescan) reads them whole again. A chat the
// webhook's user may not read is kept as one record "<task>:0" that cannot be migrated, with the
// portal's refusal.
type taskChats struct{ rescan bool }

func (t taskChats) Walk(ctx context.Context, e engine.Env, child *engine.Entity, st *engine.GetStats) error {
	chats, err := taskChatsOf(ctx, e)
	if err != nil {
		return err
	}
	chatOf := make(map[string]int64, len(chats))
	for chat, task := range chats {
		chatOf[task] = chat
	}
	// Only the comments read from a chat (chat_id) count: the old card's have ids of their own.
	newest, err := newestMessages(ctx, e.Store(), child.Name, "chat_id", func(task string) (int64, error) {
		return chatOf[task], nil
	})
	if err != nil {
		return err
	}
	w := messagesWalk(slices.Collect(maps.Keys(chats)), func(chat int64) string { return chats[chat] }, newest, t.rescan,
		func(ctx context.Context, tx engine.Store, chat int64, u *engine.Unreachable, zone *time.Location) error {
			return lostTaskChat(ctx, e, tx, child, chats[chat], chat, u, zone)
		})
	_, _, err = w.Run(ctx, e, child, st, e.TestLimit())
	return err
}

// taskChatsOf maps the chat of every stored task that has one to the task.
func taskChatsOf(ctx context.Context, e engine.Env) (map[int64]string, error) {
	values, err := e.Store().FieldValues(ctx, Tasks, "chatId")
	if err != nil {
		return nil, fmt.Errorf("list task chats: %w", err)
	}
	out := map[int64]string{}
	for _, v := range values {
		if engine.None(v.Value) {
			continue
		}
		id, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list task chats: task %s: chatId %q is not a number", v.SourceID, v.Value)
		}
		out[id] = v.SourceID
	}
	return out, nil
}

// lostTaskChat keeps a task chat the webhook's user may not read as one record of the task that
// cannot be migrated, with the refusal.
func lostTaskChat(ctx context.Context, e engine.Env, tx engine.Store, child *engine.Entity, task string, chat int64, u *engine.Unreachable, zone *time.Location) error {
	reason := fmt.Sprintf("out of reach: the comments of task %s are in chat %d, and %s refused it with %s (%s): "+
		"the webhook's user is not one of the chat's participants", task, chat, u.Method, u.Code, u.Description)
	payload := engine.MustJSON(engine.MarkUnreachable(map[string]json.RawMessage{"chat": engine.MustJSON(chat)}, reason))
	fields, _ := engine.FieldsOf(payload)
	in, err := engine.NewIncoming(child, task+":0", task, payload, fields, zone)
	if err != nil {
		return err
	}
	e.Log().Warn("task chat not readable", "entity", child.Name, "task", task, "chat", chat, "reason", reason)
	_, err = e.SavePage(ctx, tx, engine.Page{Records: []engine.EntityRecords{{Ent: child, Recs: []engine.Incoming{in}}},
		Reason: "no longer readable", Unread: true})
	return err
}

// PlanCalls is one call per 50 chats at least, more for chats of more than 50 messages: a
// chat's pages are unknown until it is read. Before tasks are read, the chats are estimated
// from a sample of the portal's tasks (planTaskChats).
func (taskChats) PlanCalls(ctx context.Context, e engine.Env, _ *engine.Entity, planned map[string]int64) (int64, int, string, error) {
	n, how, err := plannedTaskChats(ctx, e, planned[Tasks])
	if err != nil {
		return 0, 0, "", err
	}
	return -1, engine.CeilDiv(n, 50), fmt.Sprintf("new-card comments: im.dialog.messages.get for the %d task chats "+
		"%s, 50 pages to a call; more for chats past 50 messages", n, how), nil
}

// ParentsWalked: the tasks with a chat, whose comments the walk reads and the fetch skips.
func (taskChats) ParentsWalked(ctx context.Context, e engine.Env, tasks int64) (int64, error) {
	n, _, err := plannedTaskChats(ctx, e, tasks)
	return n, err
}

// plannedTaskChats is how many task chats the walk will read: those of the tasks read so far,
// or, before any is, the estimate for the portal's tasks.
func plannedTaskChats(ctx context.Context, e engine.Env, tasks int64) (int64, string, error) {
	chats, err := taskChatsOf(ctx, e)
	if err != nil || len(chats) > 0 {
		return int64(len(chats)), "of the tasks read so far", err
	}
	with, without, err := e.Store().CountWithField(ctx, Tasks, "chatId")
	if err != nil || with+without > 0 {
		return 0, "of the tasks read so far", err
	}
	n, err := planTaskChats(ctx, e, tasks)
	return n, "estimated from a sample of the portal's tasks (not read yet)", err
}
