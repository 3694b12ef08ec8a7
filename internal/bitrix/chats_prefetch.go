package bitrix

import (
	"context"
	"strconv"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// recentParams are im.recent.list's parameters for the page at offset.
func recentParams(offset int) map[string]any {
	return map[string]any{"OFFSET": offset, "LIMIT": recentLimit}
}

// groupChatCommand asks for the chat of the workgroup g.
func groupChatCommand(g string) rest.Command {
	return rest.Command{Key: "g" + g, Method: "im.chat.get", Params: map[string]any{"ENTITY_TYPE": "SONET_GROUP", "ENTITY_ID": g}}
}

// dialogCommand asks for the card of the chat id.
func dialogCommand(id int64) rest.Command {
	return rest.Command{Key: "c" + strconv.FormatInt(id, 10), Method: "im.dialog.get",
		Params: map[string]any{"DIALOG_ID": "chat" + strconv.FormatInt(id, 10)}}
}

// participantsCommand asks for the participants of the chat id.
func participantsCommand(id int64) rest.Command {
	return rest.Command{Key: "u" + strconv.FormatInt(id, 10), Method: "im.chat.user.list", Params: map[string]any{"CHAT_ID": id}}
}

// Prefetch makes chats an engine.Prefetcher: a rerun asks up front the recent list's first page
// and the chat of every workgroup stored (round 1), then, from their answers, the participants
// of the recent list's readable chats and the cards of the workgroups' chats the list does not
// hold (round 2), with the commands Get sends. What follows from those (a workgroup chat's
// participants, the list's further pages) the pass asks itself, and so the cards of the chats
// the webhook's user could not read last pass.
func (chatLister) Prefetch(ctx context.Context, e engine.Env, _ *engine.Entity, ahead *engine.Ahead) ([]rest.Command, error) {
	if ahead.Round > 2 {
		return nil, nil
	}
	groups, err := e.Store().SourceIDs(ctx, Groups)
	if err != nil {
		return nil, err
	}
	recent := rest.Command{Method: "im.recent.list", Params: recentParams(0)}
	if ahead.Round == 1 {
		out := []rest.Command{recent}
		for _, g := range groups {
			out = append(out, groupChatCommand(g))
		}
		return out, nil
	}
	known := map[int64]bool{}
	if r, ok := ahead.Answer(recent); ok {
		var page recentPage
		if err := r.Decode(&page); err == nil {
			for _, it := range page.Items {
				row, err := it.row()
				if err != nil || known[row.ID] {
					continue
				}
				known[row.ID] = true
				if row.Unreachable == nil {
					ahead.Anytime(participantsCommand(row.ID))
				}
			}
		}
	}
	// A workgroup chat the webhook's user could not read last pass is refused its card again,
	// most likely: an answer with an error is not kept, so asking it ahead costs a command for
	// nothing. The pass asks it, as before.
	stored, err := storedChats(ctx, e.Store())
	if err != nil {
		return nil, err
	}
	refused := map[int64]bool{}
	for _, c := range stored {
		refused[c.ID] = c.Unreachable != nil
	}
	for _, g := range groups {
		r, ok := ahead.Answer(groupChatCommand(g))
		if !ok {
			continue
		}
		var res *struct {
			ID rest.ID `json:"ID"`
		}
		if r.Decode(&res) != nil || res == nil {
			continue
		}
		if id, err := res.ID.Int64(); err == nil && !known[id] && !refused[id] {
			known[id] = true
			ahead.Anytime(dialogCommand(id))
		}
	}
	return nil, nil
}
