package bitrix

import (
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Entity names, as they appear in commands, in bitrix_records.entity and in metric labels.
const (
	Users        = "users"
	Groups       = "groups"
	GroupMembers = "group_members"
	Chats        = "chats"
	ChatMessages = "chat_messages"
)

// Entities lists the entities `ingest bitrix ENTITY PHASE` accepts, in migration order.
var Entities = []string{Users, Groups, Chats}

// kind describes how one entity is read, stored and imported.
type kind struct {
	name string
	// scan walks the source listing by ID.
	scan rest.Scan
	// dates are the fields holding dates (research/bitrix.md §5.1, §5.2).
	dates []string
	// volatile fields change without the record changing (presence, last activity): they are
	// stored but left out of the checksum, so a re-get does not re-import every active user.
	volatile []string
	// batch is how many records one import.<entity>.batch call carries (seed 001: groups 20;
	// users 50; memberships up to 100 per call, after their group).
	batch int
}

var kinds = map[string]kind{
	Users: {
		name: Users,
		// ADMIN_MODE lets an administrator's webhook see every user; select names the custom
		// fields explicitly, since "*" alone leaves them out.
		scan: rest.UsersScan(map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}}),
		dates: []string{"DATE_REGISTER", "LAST_LOGIN", "TIMESTAMP_X", "LAST_ACTIVITY_DATE",
			"PERSONAL_BIRTHDAY", "UF_EMPLOYMENT_DATE"},
		volatile: []string{"IS_ONLINE", "LAST_LOGIN", "LAST_ACTIVITY_DATE"},
		batch:    50,
	},
	Groups: {
		name: Groups,
		// Without IS_ADMIN the portal hides the groups the webhook's user cannot see.
		scan:     rest.GroupsScan(map[string]any{"IS_ADMIN": "Y"}),
		dates:    []string{"DATE_CREATE", "DATE_UPDATE", "DATE_ACTIVITY"},
		volatile: []string{"DATE_ACTIVITY", "NUMBER_OF_MEMBERS"},
		batch:    20,
	},
	GroupMembers: {name: GroupMembers, batch: 100},
}

// lookup returns the entity a command names; memberships are handled through groups.
func lookup(name string) (kind, error) {
	switch name {
	case Users, Groups:
		return kinds[name], nil
	case GroupMembers:
		return kind{}, fmt.Errorf("bitrix entity %q is migrated as part of %q: run `ingest bitrix groups ...`", name, Groups)
	case ChatMessages:
		return kind{}, fmt.Errorf("bitrix entity %q is migrated as part of %q: run `ingest bitrix chats ...`", name, Chats)
	case Chats:
		return kind{}, fmt.Errorf("bitrix entity %q has phases of its own: GetChats, SetChats, VerifyChats (or Phase)", name)
	}
	return kind{}, fmt.Errorf("unknown bitrix entity %q (valid: users, groups, chats)", name)
}
