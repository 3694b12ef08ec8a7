package bitrix_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// TestChatsRescanFlagIsChatRescan: the chats' declared --chat-rescan, taken by get (and run),
// sets the entity as ChatRescan(true) builds it, so `bitrix chats get --chat-rescan` rescans
// exactly as TestChatsEditedMessageIsFoundByItsHash proves ChatRescan does.
func TestChatsRescanFlagIsChatRescan(t *testing.T) {
	chats, _ := bitrix.Catalog().Entity(bitrix.Chats)
	rescan, _ := bitrix.Catalog(bitrix.ChatRescan(true)).Entity(bitrix.Chats)
	if reflect.DeepEqual(chats.Lister, rescan.Lister) {
		t.Fatal("ChatRescan(true) changes nothing in the chats' lister: this test cannot tell")
	}
	i := slices.IndexFunc(chats.Flags, func(f engine.Flag) bool { return f.Name == "chat-rescan" })
	if i < 0 {
		t.Fatalf("chats declare no --chat-rescan: %+v", chats.Flags)
	}
	f := chats.Flags[i]
	if f.Env != "BITRIX_CHAT_RESCAN" || f.Placeholder != "" || !slices.Equal(f.Phases, []engine.Phase{engine.PhaseGet}) {
		t.Errorf("--chat-rescan is %+v, want a switch of get read from BITRIX_CHAT_RESCAN", f)
	}
	if err := f.Set(chats, "true"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(chats.Lister, rescan.Lister) {
		t.Errorf("--chat-rescan set the lister %#v, ChatRescan(true) builds %#v", chats.Lister, rescan.Lister)
	}
}
