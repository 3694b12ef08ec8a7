package bitrix

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// verifyChats is the chats' own part of verify (seed 002 "chats-verify"): the chats the recent
// list shows that were never read, and the chats out of reach, listed with the reason. The
// engine counts the chats read in reach against the target (Entity.CountRead), lists those not
// imported, and adds the messages compared with the portal's count of every readable chat
// (chatMessageCounts), the mapping of every participant (a Listed reference) and the sample of
// chats and messages compared field by field (text included).
func verifyChats(ctx context.Context, e engine.Env, _ *engine.Entity, r *engine.VerifyReport) error {
	chats, err := storedChats(ctx, e.Store())
	if err != nil {
		return err
	}
	return verifyChatsRead(ctx, e, chats, r)
}

// verifyChatsRead lists the unreachable chats and, without a test limit (r.TestLimit, set by the
// engine's counts), reads the recent list again to find chats get never read.
func verifyChatsRead(ctx context.Context, e engine.Env, chats []chatRow, r *engine.VerifyReport) error {
	read := map[int64]bool{}
	for _, c := range chats {
		read[c.ID] = true
		if c.Unreachable == nil {
			continue
		}
		r.UnreachableCount++
		if len(r.Unreachable) < engine.MaxListed {
			r.Unreachable = append(r.Unreachable, engine.RecordIssue{Entity: Chats, SourceID: strconv.FormatInt(c.ID, 10),
				Status: string(engine.ImportErr), Reason: refusal(c.Unreachable)})
		}
	}
	if r.TestLimit != nil {
		return nil
	}
	recent, _, err := recentChats(ctx, e, 0)
	if err != nil {
		return fmt.Errorf("verify chats: %w", err)
	}
	var unread []string
	for _, c := range recent {
		if !read[c.ID] {
			unread = append(unread, strconv.FormatInt(c.ID, 10))
		}
	}
	if len(unread) > 0 {
		r.Problem("%d chats of the recent list were never read (run get again): %s", len(unread), clipList(unread))
	}
	return nil
}

// messageCounts asks the portal how many messages each chat holds (im.dialog.get
// message_count, 50 chats to a call, Concurrency calls at once) and hands each count to fn, one
// at a time; a chat the webhook's user can no longer read goes to gone instead.
func messageCounts(ctx context.Context, e engine.Env, chats []int64, fn func(chat string, count int64), gone func(chat string, u *engine.Unreachable)) error {
	cmds := make([]rest.Command, len(chats))
	for i, id := range chats {
		s := strconv.FormatInt(id, 10)
		cmds[i] = rest.Command{Key: "c" + s, Method: "im.dialog.get", Params: map[string]any{"DIALOG_ID": "chat" + s}}
	}
	return e.BatchEachConcurrently(ctx, cmds, func(key string, resp *rest.Response) error {
		var card struct {
			MessageCount int64 `json:"message_count"`
		}
		if err := resp.Decode(&card); err != nil {
			return fmt.Errorf("im.dialog.get chat%s: %w", key[1:], err)
		}
		fn(key[1:], card.MessageCount)
		return nil
	}, func(key string, err error) error {
		if u, ok := engine.UnreachableFrom("im.dialog.get", err); ok {
			gone(key[1:], u)
			return nil
		}
		return fmt.Errorf("chat %s: %w", key[1:], err)
	})
}

// chatMessageCounts is the chat messages' PortalCount: how many messages the portal holds in
// each of the chats (im.dialog.get message_count), a chat the webhook's user can no longer read
// answered as gone.
func chatMessageCounts(ctx context.Context, e engine.Env, chats []string, fn func(engine.ParentCount)) error {
	ids := make([]int64, len(chats))
	for i, c := range chats {
		id, err := strconv.ParseInt(c, 10, 64)
		if err != nil {
			return fmt.Errorf("chat %q: the id is not a number: %w", c, err)
		}
		ids[i] = id
	}
	return messageCounts(ctx, e, ids, func(chat string, count int64) {
		fn(engine.ParentCount{Parent: chat, Count: count})
	}, func(chat string, u *engine.Unreachable) {
		fn(engine.ParentCount{Parent: chat, Gone: u})
	})
}

// clipList joins ids for a problem line, at most ten of them.
func clipList(ids []string) string {
	if len(ids) > 10 {
		return strings.Join(ids[:10], ", ") + fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return strings.Join(ids, ", ")
}
