package bitrix

import (
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Users is the entity of the portal's users (seed 000 stage 4.1, research/bitrix.md §5.1).
const Users = "users"

func usersEntity() *engine.Entity {
	return &engine.Entity{
		Name: Users,
		Help: "portal users",
		// ADMIN_MODE lets an administrator's webhook see every user; select names the custom
		// fields explicitly, since "*" alone leaves them out.
		Lister: &engine.IDScan{Scan: rest.UsersScan(map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}}),
			CountParams: map[string]any{"select": []string{"ID"}}},
		Dates: []string{"DATE_REGISTER", "LAST_LOGIN", "TIMESTAMP_X", "LAST_ACTIVITY_DATE",
			"PERSONAL_BIRTHDAY", "UF_EMPLOYMENT_DATE"},
		Volatile: []string{"IS_ONLINE", "LAST_LOGIN", "LAST_ACTIVITY_DATE"},
		Batch:    50,
		Fields:   &engine.CustomFields{Method: "user.userfield.list", Params: map[string]any{"order": map[string]string{"ID": "ASC"}}},
	}
}
