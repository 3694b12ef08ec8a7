package engine

import "github.com/ingest-dev/ingest/internal/bitrix/rest"

// testUsers describes the portal's users as the engine's own tests need them: the engine knows no
// entity, so its white-box tests bring one, shaped like the real users (dates, volatile fields)
// so that decoding and storing cost what they cost in a migration.
func testUsers() *Entity {
	return &Entity{
		Name: "users",
		Lister: &IDScan{Scan: rest.UsersScan(map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}}),
			CountParams: map[string]any{"select": []string{"ID"}}},
		Dates: []string{"DATE_REGISTER", "LAST_LOGIN", "TIMESTAMP_X", "LAST_ACTIVITY_DATE",
			"PERSONAL_BIRTHDAY", "UF_EMPLOYMENT_DATE"},
		Volatile: []string{"IS_ONLINE", "LAST_LOGIN", "LAST_ACTIVITY_DATE"},
		Batch:    50,
	}
}
