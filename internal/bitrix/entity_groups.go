package bitrix

import (
	"errors"
	"strings"

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

// noGroupsDelta is why every pass of groups is full (docs/bitrix-delta.md): sonet_group.get
// filters on DATE_UPDATE, but a membership change moves neither it nor DATE_ACTIVITY (the
// portal's CSocNetGroup::SetStat rewrites NUMBER_OF_MEMBERS only), so every group's members must
// be read again anyway.
const noGroupsDelta = "a membership change moves neither DATE_UPDATE nor DATE_ACTIVITY of its group and " +
	"sonet_group.user.get has no filter: every group's members are read each pass, which costs more than listing the groups"

func groupsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Groups,
		Help:     "workgroups and their members (users must be imported and verified first)",
		Requires: []string{Users},
		// Without IS_ADMIN the portal hides the groups the webhook's user cannot see.
		Lister:   &engine.IDScan{Scan: rest.GroupsScan(map[string]any{"IS_ADMIN": "Y"}), Unfiltered: noGroupsDelta},
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
		// A membership is "<group>:<user>".
		IDFormat: "GROUP:USER",
		// sonet_group.user.get returns every active member of one group at once (no paging).
		Fetch:       &engine.ChildFetch{Method: "sonet_group.user.get", ParentParam: "ID", KeyField: "USER_ID", ParentGone: isGroupGone},
		ParentField: "GROUP_ID",
		Refs:        []engine.Ref{{Field: "USER_ID", Entity: Users}},
		Batch:       100,
		NoFields:    noGroupFields,
	}
}

// isGroupGone recognises sonet_group.user.get's answer for a group that does not exist (400 with
// an empty code: research/bitrix.md §5.2).
func isGroupGone(err error) bool {
	apiErr, ok := errors.AsType[*rest.APIError](err)
	return ok && (strings.Contains(apiErr.Description, "group not found") ||
		strings.Contains(apiErr.Description, "Wrong socialnetwork group ID"))
}
