package bitrix

import (
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Workgroups and their members (seed 001, research/bitrix.md §5.2).
const (
	Groups       = "groups"
	GroupMembers = "group_members"
)

// noGroupFields is why fields-get and fields-set do nothing for workgroups.
const noGroupFields = "workgroups have no custom fields in the Bitrix24 REST API (sonet_group has no userfield methods)"

func groupsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Groups,
		Help:     "workgroups and their members (users must be imported and verified first)",
		Requires: []string{Users},
		// Without IS_ADMIN the portal hides the groups the webhook's user cannot see.
		Lister:   &engine.IDScan{Scan: rest.GroupsScan(map[string]any{"IS_ADMIN": "Y"})},
		Refs:     []engine.Ref{{Field: "OWNER_ID", Entity: Users, Name: "owner"}},
		Dates:    []string{"DATE_CREATE", "DATE_UPDATE", "DATE_ACTIVITY"},
		Volatile: []string{"DATE_ACTIVITY", "NUMBER_OF_MEMBERS"},
		Batch:    20, // seed 001: import.groups.batch takes 20 groups
		NoFields: noGroupFields,
	}
}

func groupMembersEntity() *engine.Entity {
	return &engine.Entity{
		Name:   GroupMembers,
		Noun:   "memberships",
		Parent: Groups,
		// sonet_group.user.get returns every active member of one group at once (no paging).
		Fetch:       &engine.ChildFetch{Method: "sonet_group.user.get", ParentParam: "ID", KeyField: "USER_ID", ParentGone: engine.IsGroupGone},
		ParentField: "GROUP_ID",
		Refs:        []engine.Ref{{Field: "USER_ID", Entity: Users}},
		Batch:       100,
		NoFields:    noGroupFields,
	}
}
