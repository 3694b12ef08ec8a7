package bitrix

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// verifyChats is the chats' own part of verify (seed 002 "chats-verify"): chat and message
// counts, chats of which fewer messages were read than the portal counts, chats the recent list
// shows that were never read, the mapping of every participant, and the chats out of reach,
// listed with the reason. The engine adds the records not imported and the sample of chats and
// messages compared field by field (text included).
func verifyChats(ctx context.Context, e engine.Env, _ *engine.Entity, r *engine.VerifyReport) error {
	m := &engine.ChildCounts{Entity: ChatMessages, ByStatus: map[string]int64{}, Summary: "messages"}
	p := &engine.RefCoverage{Entity: Chats, Field: "participants", Refers: Users}
	chats, err := storedChats(ctx, e.Store())
	if err != nil {
		return err
	}
	if err := verifyChatCounts(ctx, e, chats, r, m); err != nil {
		return err
	}
	if err := verifyMessageCounts(ctx, e, chats, r, m); err != nil {
		return err
	}
	if err := verifyParticipants(ctx, e, r, p); err != nil {
		return err
	}
	r.Children = append(r.Children, *m)
	r.References = append(r.References, *p)
	return nil
}

// verifyChatCounts compares the readable chats read with the target, lists the unreachable
// ones, and reads the recent list again to find chats get never read; m gets the messages'
// statuses.
func verifyChatCounts(ctx context.Context, e engine.Env, chats []chatRow, r *engine.VerifyReport, m *engine.ChildCounts) error {
	read := map[int64]bool{}
	for _, c := range chats {
		read[c.ID] = true
		if c.Unreachable == nil {
			r.SourceCount++
			continue
		}
		r.UnreachableCount++
		if len(r.Unreachable) < engine.MaxListed {
			r.Unreachable = append(r.Unreachable, engine.RecordIssue{Entity: Chats, SourceID: strconv.FormatInt(c.ID, 10),
				Status: string(engine.ImportErr), Reason: refusal(c.Unreachable)})
		}
	}
	// The chats out of reach are not in SourceCount: only the readable ones a person acknowledged
	// are subtracted.
	acked, err := e.Store().CountExcusedReachable(ctx, e.Entity(Chats), "unreachable")
	if err != nil {
		return err
	}
	r.Expected = r.SourceCount - acked
	inv, err := e.Store().Inventory(ctx, Chats)
	if err != nil {
		return err
	}
	r.TestLimit = inv.Limit
	if inv.Limit == nil {
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
	}
	if r.TargetCount, err = e.Target().Count(ctx, Chats); err != nil {
		return fmt.Errorf("verify chats: %w", err)
	}
	if r.TargetCount != r.Expected {
		r.Problem("target holds %d chats, expected %d", r.TargetCount, r.Expected)
	}
	counts, err := e.Store().StatusCounts(ctx)
	if err != nil {
		return err
	}
	for _, c := range counts {
		switch c.Scope {
		case Chats:
			r.ByStatus[string(c.Status)] = c.N
		case ChatMessages:
			m.ByStatus[string(c.Status)] = c.N
			m.Read += c.N
		}
	}
	// Messages of an acknowledged chat (or acknowledged themselves) are not expected on the
	// target.
	excusedMessages, err := e.Store().CountExcused(ctx, e.Entity(ChatMessages))
	if err != nil {
		return err
	}
	m.Excused = excusedMessages
	issues, err := e.Store().Unimported(ctx, Chats, "unreachable")
	if err != nil {
		return err
	}
	if len(issues) > 0 {
		r.Problem("%d readable chats are not IMPORT_OK", len(issues))
		r.NotImported = issues[:min(len(issues), engine.MaxListed)]
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

// verifyMessageCounts compares the messages stored with the portal's count of every readable
// chat (im.dialog.get message_count, 50 chats per batch) and with the target.
func verifyMessageCounts(ctx context.Context, e engine.Env, chats []chatRow, r *engine.VerifyReport, m *engine.ChildCounts) error {
	stored, err := e.Store().CountByParent(ctx, ChatMessages)
	if err != nil {
		return err
	}
	var readable []int64
	for _, c := range chats {
		if c.Unreachable == nil {
			readable = append(readable, c.ID)
		}
	}
	behind := 0
	err = messageCounts(ctx, e, readable, func(chat string, count int64) {
		m.Source += count
		if got := stored[chat]; got < count {
			behind++
			if len(m.Short) < engine.MaxListed {
				m.Short = append(m.Short, engine.ParentCounts{Parent: chat, Source: count, Read: got, Target: -1})
			}
		}
	}, func(chat string, u *engine.Unreachable) {
		r.Problem("chat %s can no longer be read (%s): run get again", chat, u.Code)
	})
	if err != nil {
		return err
	}
	slices.SortFunc(m.Short, func(a, b engine.ParentCounts) int { return strings.Compare(a.Parent, b.Parent) })
	if behind > 0 {
		r.Problem("%d chats have more messages on the portal than were read (run get again)", behind)
	}
	if m.Target, err = e.Target().Count(ctx, ChatMessages); err != nil {
		return fmt.Errorf("verify chat messages: %w", err)
	}
	if m.Target != m.Read-m.Excused {
		r.Problem("target holds %d chat messages, %d were read (%d of them excused)", m.Target, m.Read, m.Excused)
	}
	if n := m.Read - m.ByStatus[string(engine.ImportOK)] - m.Excused; n > 0 {
		r.Problem("%d chat messages are not IMPORT_OK", n)
		if m.NotImported, err = e.Store().NotImported(ctx, e.Entity(ChatMessages)); err != nil {
			return err
		}
	}
	return nil
}

// verifyParticipants checks that every participant of every readable chat has a target id.
func verifyParticipants(ctx context.Context, e engine.Env, r *engine.VerifyReport, p *engine.RefCoverage) error {
	c, err := e.Store().ListCoverage(ctx, Chats, "participants", Users, "unreachable")
	if err != nil {
		return fmt.Errorf("verify participants: %w", err)
	}
	p.Total, p.Mapped, p.Unmapped = c.Total, c.Mapped, c.Unmapped
	if n := p.Total - p.Mapped; n > 0 {
		r.Problem("%d of %d chat participants have no target id (users not imported)", n, p.Total)
	}
	return nil
}

// clipList joins ids for a problem line, at most ten of them.
func clipList(ids []string) string {
	if len(ids) > 10 {
		return strings.Join(ids[:10], ", ") + fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return strings.Join(ids, ", ")
}
