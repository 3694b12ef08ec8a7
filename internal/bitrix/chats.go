package bitrix

// Chats and their messages (seed 002), in the same single-pass model as the other entities but
// read the only way the portal allows (research/bitrix.md §5.3; docs/bitrix-chats.md):
//
//   - no method lists every chat of a portal: get reads the chats of the webhook's user from
//     im.recent.list (pages that overlap, de-duplicated by chat id) and the chats of the
//     workgroups already read (im.chat.get by SONET_GROUP). A chat that user cannot read is
//     stored with the portal's refusal and put in IMPORT_ERR, so verify lists it: nothing is
//     dropped silently;
//   - messages come from im.dialog.messages.get, 50 at a time behind a cursor, chat by chat;
//     where a chat's walk stands is in the page log, so a killed get resumes each chat where it
//     was; later gets only top up (FIRST_ID = the newest stored message), and the ChatRescan
//     option reads whole histories again to find edited messages by their hash;
//   - set imports chats (20 per call) and then, only for chats in IMPORT_OK, their messages
//     in id order (100 per call), with user ids translated through the id map.

import (
	"encoding/json"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// chatRow is the payload of a chats record: the chat as the portal describes it to the
// webhook's user, put together from im.recent.list (or im.dialog.get, for a chat found through
// its workgroup) and im.chat.user.list. Ids are the portal's.
type chatRow struct {
	ID int64 `json:"id"`
	// DialogID is how the portal addresses the chat: "chat<ID>", or for a 1:1 dialog the other
	// user's id.
	DialogID    string `json:"dialog_id"`
	Type        string `json:"type"` // private, chat, open, sonetGroup, tasksTask, lines...
	MessageType string `json:"message_type,omitempty"`
	Name        string `json:"name"`
	Owner       int64  `json:"owner,omitempty"`
	EntityType  string `json:"entity_type,omitempty"` // SONET_GROUP, TASKS_TASK, LINES, CRM...
	EntityID    string `json:"entity_id,omitempty"`
	DateCreate  string `json:"date_create,omitempty"`
	// Participants are the user ids im.chat.user.list returned.
	Participants []int64 `json:"participants"`
	// ParticipantsUnavailable says why the participants could not be read; the chat then
	// cannot be imported (never half-mapped).
	ParticipantsUnavailable string `json:"participants_unavailable,omitempty"`
	// Unreachable is the portal's refusal to show the chat to the webhook's user; nil when the
	// chat can be read.
	Unreachable *engine.Unreachable `json:"unreachable,omitempty"`
	// LastMessage is the id of the chat's newest message as the listing showed it (the recent
	// item's message, the card's last_message_id); 0 when it did not. It is left out of the
	// record, which would otherwise change with every message: the messages walk leaves alone
	// a chat whose last message is stored.
	LastMessage int64 `json:"-"`
}

func decodeChatRow(payload json.RawMessage) (chatRow, error) {
	var row chatRow
	if err := json.Unmarshal(payload, &row); err != nil {
		return row, fmt.Errorf("decode chat: %w", err)
	}
	return row, nil
}

// refusal says in words why a chat is out of reach, for IMPORT_ERR and the verify report: the
// portal answers ACCESS_ERROR to everyone outside a chat.
func refusal(u *engine.Unreachable) string {
	return fmt.Sprintf("out of reach: %s refused with %s (%s): the webhook's user is not a participant "+
		"and only participants may read a chat; it needs a token of one of its participants",
		u.Method, u.Code, u.Description)
}
