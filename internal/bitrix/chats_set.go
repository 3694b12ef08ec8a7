package bitrix

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// SetChats imports the chats and their messages through the target (seed 002 "chats-set"):
// first the NEW chats, 20 per call, in id order; then, chat by chat in chat id order and only
// for chats in IMPORT_OK, their NEW messages in message id order, 100 per call. Failures follow
// the engine's rules: a retryable one goes to ERROR_RETRY and is retried on the schedule, in
// this run; a permanent one, an unresolvable reference (a user, workgroup or chat without a
// target id) or an unreadable date goes to IMPORT_ERR. Messages of a chat that is not imported
// stay NEW and are counted as waiting. It refuses to start until users are verified.
func (e *Engine) SetChats(ctx context.Context) (SetStats, error) {
	if err := e.requireVerified(ctx, Chats, "set", Users); err != nil {
		return nil, err
	}
	defer e.Metrics.Phase(Chats, "set")()
	s := &setter{e: e, st: SetStats{}, start: e.now()}
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity IN ('chats', 'chat_messages')
AND status IN ('NEW', 'ERROR_RETRY')`).Scan(&s.backlog); err != nil {
		return s.st, fmt.Errorf("count chats backlog: %w", err)
	}
	e.Log.Info("set started", "entity", Chats, "backlog", s.backlog)
	for {
		worked, err := s.chatRound(ctx)
		if err != nil {
			return s.st, err
		}
		if worked {
			continue
		}
		next, ok, err := nextRetry(ctx, e.Pool, []kind{chatsKind, messagesKind})
		if err != nil {
			return s.st, err
		}
		if !ok {
			break
		}
		if err := e.sleep(ctx, next.Sub(e.now())); err != nil {
			return s.st, err
		}
	}
	waiting := &s.st.of(ChatMessages).Waiting
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM bitrix_records m WHERE m.entity = 'chat_messages'
AND m.status IN ('NEW', 'ERROR_RETRY') AND NOT EXISTS (SELECT 1 FROM bitrix_records c
    WHERE c.entity = 'chats' AND c.source_id = m.parent_source_id AND c.status = 'IMPORT_OK')`).Scan(waiting); err != nil {
		return s.st, fmt.Errorf("count waiting messages: %w", err)
	}
	if *waiting > 0 {
		e.Log.Warn("messages wait for their chat, which is not imported", "entity", ChatMessages, "count", *waiting)
	}
	for _, name := range []string{Chats, ChatMessages} {
		c := s.st.of(name)
		e.Log.Info("set done", "entity", name, "imported", c.Imported, "failed", c.Failed,
			"retry_pending", c.Retry, "retries", c.Retries, "waiting_for_chat", c.Waiting)
	}
	return s.st, nil
}

// chatRound sends everything due now: NEW chats, chat retries, then the NEW messages of
// imported chats and message retries. It reports whether it sent anything.
func (s *setter) chatRound(ctx context.Context) (bool, error) {
	worked := false
	for after := int64(0); ; {
		ids, err := Machine.Pick(ctx, s.e.Pool, status.PickParams{Statuses: []status.Status{New}, After: after,
			Limit: chatsKind.batch, ScopeValue: Chats})
		if err != nil || len(ids) == 0 {
			if err != nil {
				return worked, err
			}
			break
		}
		if err := s.importChatRecords(ctx, chatsKind, ids); err != nil {
			return worked, err
		}
		worked, after = true, ids[len(ids)-1]
	}
	did, err := s.chatRetries(ctx, chatsKind)
	if err != nil {
		return worked, err
	}
	worked = worked || did
	if did, err = s.newMessages(ctx); err != nil {
		return worked, err
	}
	worked = worked || did
	did, err = s.chatRetries(ctx, messagesKind)
	return worked || did, err
}

// chatRetries sends the entity's ERROR_RETRY records that are due.
func (s *setter) chatRetries(ctx context.Context, k kind) (bool, error) {
	worked := false
	for {
		ids, err := dueRetries(ctx, s.e.Pool, k.name, s.e.now(), k.batch)
		if err != nil || len(ids) == 0 {
			return worked, err
		}
		if err := s.importChatRecords(ctx, k, ids); err != nil {
			return worked, err
		}
		worked = true
	}
}

// newMessages sends the NEW messages of the imported chats, in chat id order and within a chat
// in message id order, 100 per call (a call may carry the end of one chat and the start of
// the next).
func (s *setter) newMessages(ctx context.Context) (bool, error) {
	rows, err := s.e.Pool.Query(ctx, `SELECT DISTINCT m.parent_source_id::bigint FROM bitrix_records m
WHERE m.entity = 'chat_messages' AND m.status = 'NEW' AND EXISTS (SELECT 1 FROM bitrix_records c
    WHERE c.entity = 'chats' AND c.source_id = m.parent_source_id AND c.status = 'IMPORT_OK')
ORDER BY 1`)
	if err != nil {
		return false, fmt.Errorf("pick chats with new messages: %w", err)
	}
	chats, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return false, fmt.Errorf("pick chats with new messages: %w", err)
	}
	var pending []int64
	flush := func(all bool) error {
		for len(pending) >= messagesKind.batch || (all && len(pending) > 0) {
			n := min(len(pending), messagesKind.batch)
			if err := s.importChatRecords(ctx, messagesKind, pending[:n]); err != nil {
				return err
			}
			pending = pending[n:]
		}
		return nil
	}
	for _, chat := range chats {
		rows, err := s.e.Pool.Query(ctx, `SELECT id FROM bitrix_records WHERE entity = 'chat_messages'
AND parent_source_id = $1 AND status = 'NEW' ORDER BY split_part(source_id, ':', 2)::bigint`, fmt.Sprint(chat))
		if err != nil {
			return false, fmt.Errorf("pick messages of chat %d: %w", chat, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return false, fmt.Errorf("pick messages of chat %d: %w", chat, err)
		}
		pending = append(pending, ids...)
		if err := flush(false); err != nil {
			return false, err
		}
	}
	return len(chats) > 0, flush(true)
}

// importChatRecords sends the records with the given ids, in that order, to
// import.<entity>.batch and records each one's outcome as set does for every entity.
func (s *setter) importChatRecords(ctx context.Context, k kind, ids []int64) error {
	loaded, err := loadRecords(ctx, s.e.Pool, ids)
	if err != nil {
		return err
	}
	byID := make(map[int64]Record, len(loaded))
	for _, r := range loaded {
		byID[r.ID] = r
	}
	recs := make([]Record, 0, len(loaded))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			recs = append(recs, r)
		}
	}
	rf, err := loadChatRefs(ctx, s.e.Pool, recs)
	if err != nil {
		return err
	}
	build := chatsPayloadFor(k)
	_, err = s.send(ctx, k, recs, func(r Record) (json.RawMessage, error) { return build(r, rf) })
	return err
}
