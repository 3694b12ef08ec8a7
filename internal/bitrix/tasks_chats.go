package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// taskChats is the Walker of the comments of new-card tasks: they are the messages of the task's
// chat (tasks.task.list's chatId), read by the chats' messages walk (messagesWalk) into
// task_comments, each chat's place in task_comments' page log. Later gets only top up a chat from
// its newest stored message, as for chats; rescan (ChatRescan) reads them whole again. A chat the
// webhook's user may not read is kept as one record "<task>:0" that cannot be migrated, with the
// portal's refusal.
type taskChats struct{ rescan bool }

func (t taskChats) walk(ctx context.Context, e *Engine, child *Entity, st *GetStats) error {
	chats, err := taskChatsOf(ctx, e)
	if err != nil {
		return err
	}
	newest := map[int64]int64{}
	rows, err := e.Pool.Query(ctx, `SELECT (t.payload->>'chatId')::bigint, max(split_part(c.source_id, ':', 2)::bigint)
FROM bitrix_records c JOIN bitrix_records t ON t.entity = $2 AND t.source_id = c.parent_source_id
WHERE c.entity = $1 AND c.payload ? 'chat_id' GROUP BY 1`, child.Name, Tasks)
	if err != nil {
		return fmt.Errorf("find the newest stored task chat messages: %w", err)
	}
	var chat, id int64
	if _, err := pgx.ForEachRow(rows, []any{&chat, &id}, func() error { newest[chat] = id; return nil }); err != nil {
		return fmt.Errorf("find the newest stored task chat messages: %w", err)
	}
	w := messagesWalk(slices.Collect(maps.Keys(chats)), func(chat int64) string { return chats[chat] }, newest, t.rescan,
		func(ctx context.Context, tx pgx.Tx, chat int64, u *Unreachable, zone *time.Location) error {
			return lostTaskChat(ctx, e, tx, child, chats[chat], chat, u, zone)
		})
	_, _, err = w.run(ctx, e, child, st, e.TestLimit)
	return err
}

// taskChatsOf maps the chat of every stored task that has one to the task.
func taskChatsOf(ctx context.Context, e *Engine) (map[int64]string, error) {
	rows, err := e.Pool.Query(ctx, `SELECT source_id, payload->>'chatId' FROM bitrix_records
WHERE entity = $1 AND coalesce(payload->>'chatId', '0') NOT IN ('', '0') ORDER BY id`, Tasks)
	if err != nil {
		return nil, fmt.Errorf("list task chats: %w", err)
	}
	out := map[int64]string{}
	var task, chat string
	_, err = pgx.ForEachRow(rows, []any{&task, &chat}, func() error {
		id, err := strconv.ParseInt(chat, 10, 64)
		if err != nil {
			return fmt.Errorf("task %s: chatId %q is not a number", task, chat)
		}
		out[id] = task
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list task chats: %w", err)
	}
	return out, nil
}

// lostTaskChat keeps a task chat the webhook's user may not read as one record of the task that
// cannot be migrated, with the refusal.
func lostTaskChat(ctx context.Context, e *Engine, tx pgx.Tx, child *Entity, task string, chat int64, u *Unreachable, zone *time.Location) error {
	reason := fmt.Sprintf("out of reach: the comments of task %s are in chat %d, and %s refused it with %s (%s): "+
		"the webhook's user is not one of the chat's participants", task, chat, u.Method, u.Code, u.Description)
	payload := mustJSON(markUnreachable(map[string]json.RawMessage{"chat": mustJSON(chat)}, reason))
	fields, _ := fieldsOf(payload)
	in, err := newIncoming(child, task+":0", task, payload, fields, zone)
	if err != nil {
		return err
	}
	e.Log.Warn("task chat not readable", "entity", child.Name, "task", task, "chat", chat, "reason", reason)
	c := status.Change{Reason: "no longer readable", Actor: e.Actor, RunID: e.RunID}
	if _, err := saveRecords(ctx, tx, child.Name, []incoming{in}, c); err != nil {
		return err
	}
	_, err = refuseUnreachable(ctx, tx, child.Name, []incoming{in}, status.Change{Actor: e.Actor, RunID: e.RunID})
	return err
}

// planCalls: one call per 50 chats at least, more for chats of more than 50 messages.
func (taskChats) planCalls(ctx context.Context, e *Engine, _ *Entity, _ map[string]int64) (int64, int, string, error) {
	chats, err := taskChatsOf(ctx, e)
	if err != nil {
		return 0, 0, "", err
	}
	return -1, ceilDiv(int64(len(chats)), 50), fmt.Sprintf("new-card comments: im.dialog.messages.get for the %d task chats "+
		"of the tasks read so far, 50 pages to a call; more for chats past 50 messages", len(chats)), nil
}

// parentsWalked: the tasks with a chat, whose comments the walk reads and the fetch skips.
func (taskChats) parentsWalked(ctx context.Context, e *Engine) (int64, error) {
	chats, err := taskChatsOf(ctx, e)
	return int64(len(chats)), err
}
