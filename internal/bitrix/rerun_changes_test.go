package bitrix_test

import (
	"slices"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestRerunFindsWhatChangedInFullPassEntities: users, groups and chats keep the full pass
// (docs/bitrix-delta.md) and the chats' messages are topped up only where the listing shows a
// new last message; a rerun still finds an edited user, an edited group, a member who left an
// unchanged group, a participant added to a chat and a new message.
func TestRerunFindsWhatChangedInFullPassEntities(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 40, Groups: 4, Chats: 8, MessagesPerChat: 12, Seed: 31})
	e := v.engine(chatRetry)
	get := func(entity string) *engine.GetStats {
		t.Helper()
		st, err := e.Get(v.ctx, entity)
		if err != nil {
			t.Fatalf("get %s: %v", entity, err)
		}
		return &st
	}
	get(bitrix.Users)
	members := get(bitrix.Groups).Of(bitrix.GroupMembers).Rows
	get(bitrix.Chats)

	v.portal.SetUserField(5, "WORK_POSITION", "главный инженер")
	groups := v.portal.GroupIDs()
	v.portal.SetGroupField(groups[0], "NAME", "Переименованная группа")
	var left bitrixfake.Member // a member (not the owner) of a group nothing else changed in
	for _, m := range v.portal.ActiveMembers(groups[1]) {
		if m.Role == "K" {
			left = m
			break
		}
	}
	if left.UserID == 0 {
		t.Fatalf("group %d has no ordinary member to take out", groups[1])
	}
	v.portal.RemoveMember(groups[1], left.UserID)
	readable, _ := portalChats(v.portal)
	var joined, written bitrixfake.Chat
	for _, c := range readable {
		switch {
		case c.Type == "chat" && joined.ID == 0:
			joined = c
		case c.ID != joined.ID && written.ID == 0:
			written = c
		}
	}
	if joined.ID == 0 || written.ID == 0 {
		t.Fatalf("the portal has no group chat and another readable chat: %+v", readable)
	}
	newcomer := 0
	for _, u := range v.portal.UserIDs() {
		if !slices.Contains(joined.Members, u) {
			newcomer = u
			break
		}
	}
	if err := v.portal.AddChatUser(joined.ID, newcomer); err != nil {
		t.Fatal(err)
	}
	if _, err := v.portal.AddMessage(written.ID, webhookUser, "новое сообщение после миграции"); err != nil {
		t.Fatal(err)
	}

	if c := get(bitrix.Users).Of(bitrix.Users); c.Changed != 1 || c.Inserted != 0 {
		t.Errorf("users rerun %+v, want the edited user changed", c)
	}
	st := get(bitrix.Groups)
	if c := st.Of(bitrix.Groups); c.Changed != 1 || c.Inserted != 0 {
		t.Errorf("groups rerun %+v, want the renamed group changed", c)
	}
	if got := st.Of(bitrix.GroupMembers).Rows; got != members-1 {
		t.Errorf("groups rerun read %d memberships, want %d: the member who left is no longer listed", got, members-1)
	}
	before := v.portal.Stats().Calls["im.dialog.messages.get"]
	st = get(bitrix.Chats)
	if c := st.Of(bitrix.Chats); c.Changed != 1 {
		t.Errorf("chats rerun %+v, want the chat with a new participant changed", c)
	}
	if c := st.Of(bitrix.ChatMessages); c.Inserted != 1 || c.Rows != 1 {
		t.Errorf("chat messages rerun %+v, want the new message alone", c)
	}
	if calls := v.portal.Stats().Calls["im.dialog.messages.get"] - before; calls != 1 {
		t.Errorf("the rerun made %d message calls, want one, for the chat with a new message", calls)
	}
}
