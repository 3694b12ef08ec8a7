package bitrix

import "github.com/ingest-dev/ingest/internal/bitrix/engine"

// Chats and their messages (seed 002, research/bitrix.md §5.3, docs/bitrix-chats.md).
const (
	Chats        = "chats"
	ChatMessages = "chat_messages"
)

// ChatRescan is the chats' option (`bitrix chats get --chat-rescan`, BITRIX_CHAT_RESCAN) to read
// every chat's whole history again instead of only the messages newer than the newest one
// stored: the way to find edited messages, whose hash changes (they go back to NEW). The task
// chats that tasks get walks (task_comments) follow it too, being read by the same walk.
func ChatRescan(on bool) CatalogOption {
	return func(o *catalogOptions) { o.chatRescan = on }
}

// noChatFields is why fields-get and fields-set do nothing for chats.
const noChatFields = "chats have no custom fields in the Bitrix24 REST API"

func chatsEntity(o catalogOptions) *engine.Entity {
	return &engine.Entity{
		Name:     Chats,
		Help:     "chats and their messages (users must be imported and verified first; see docs/bitrix-chats.md)",
		Requires: []string{Users},
		// No method lists every chat of a portal: the chats' lister reads the webhook user's
		// recent list and the workgroups' chats, then walks every chat's messages behind a
		// cursor (messagesWalk, a KeyWalk).
		Lister: chatLister{rescan: o.chatRescan},
		Refs: []engine.Ref{
			{Field: "participants", Entity: Users, Values: chatUsers, Listed: true},
			{Field: "entity_id", Entity: Groups, Values: chatGroup},
		},
		Dates: []string{"date_create"},
		// Chat ids come as numbers from one method and strings from the next: sent as strings.
		Shapes:   engine.Shapes{IDs: []string{"source_id", "entity_id"}},
		Batch:    20, // seed 002: import.chats.batch takes 20 chats
		NoFields: noChatFields,
		Payload:  chatPayload,
		Verify:   verifyChats,
		Flags:    []engine.Flag{chatRescanFlag()},
		// A chat the webhook's user cannot read carries the portal's refusal (chatRow.Unreachable).
		OutOfReach: "unreachable",
		// No method counts every chat: verify counts the chats get read (verifyChats finds those
		// the recent list shows and get missed).
		CountRead: true,
	}
}

// chatRescanFlag is ChatRescan on the chats' commands: `bitrix chats get --chat-rescan`.
func chatRescanFlag() engine.Flag {
	return engine.Flag{
		Name:   "chat-rescan",
		Env:    "BITRIX_CHAT_RESCAN",
		Help:   "read every chat's whole history again (finds edited messages) instead of only the new messages",
		Phases: []engine.Phase{engine.PhaseGet},
		Set: func(e *engine.Entity, _ string) error {
			e.Lister = chatLister{rescan: true}
			return nil
		},
	}
}

func chatMessagesEntity() *engine.Entity {
	return &engine.Entity{
		Name:   ChatMessages,
		Noun:   "chat messages",
		Parent: Chats,
		// verify compares the messages read with the portal's count of every readable chat.
		ChildCount: &engine.PortalCount{Summary: "messages", Count: chatMessageCounts},
		// Walked by the chats' lister; author, mentions in the BB-code text and likes are users.
		Refs:  []engine.Ref{{Field: "author_id", Entity: Users, Values: messageUsers}},
		Dates: []string{"date"},
		// A message's "unread" says whether the webhook's user has read it, not what it is.
		Volatile: []string{"unread"},
		Batch:    100, // seed 002: 100 messages per call
		IDFormat: "CHAT:MESSAGE",
		// A chat's messages reach the target in the order they were written.
		Order:    engine.OrderByIDPart(2),
		NoFields: noChatFields,
		Payload:  messagePayload,
		// The message id as a string, as every id is sent (the portal writes ids either way).
		Shapes: engine.Shapes{IDs: []string{"source_id"}},
	}
}
