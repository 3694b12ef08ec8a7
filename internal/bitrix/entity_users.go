package bitrix

import (
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Users is the entity of the portal's users (seed 000 stage 4.1, research/bitrix.md §5.1).
const Users = "users"

// noUsersDelta is why every pass of users is full (docs/bitrix-delta.md).
const noUsersDelta = "user.get documents filters on the fields of user.add only, and TIMESTAMP_X is not one " +
	"(the server takes it, the documentation does not promise it); a full pass costs a call per 2,500 users"

func usersEntity() *engine.Entity {
	return &engine.Entity{
		Name: Users,
		Help: "portal users",
		// ADMIN_MODE lets an administrator's webhook see every user; select names the custom
		// fields explicitly, since "*" alone leaves them out.
		Lister: &engine.IDScan{Scan: rest.UsersScan(map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}}),
			CountParams: map[string]any{"select": []string{"ID"}}, Unfiltered: noUsersDelta},
		Dates: []string{"DATE_REGISTER", "LAST_LOGIN", "TIMESTAMP_X", "LAST_ACTIVITY_DATE",
			"PERSONAL_BIRTHDAY", "UF_EMPLOYMENT_DATE"},
		Volatile: []string{"IS_ONLINE", "LAST_LOGIN", "LAST_ACTIVITY_DATE"},
		Shapes:   userShapes,
		Batch:    50,
		Fields:   &engine.CustomFields{Method: "user.userfield.list", Params: map[string]any{"order": map[string]string{"ID": "ASC"}}},
	}
}

// userShapes are the canonical forms of a user's fields: every field user.fields lists is sent,
// null when the portal left it out (it leaves out empty ones) or sent it empty; ACTIVE as a
// boolean (the portal writes "Y"/"N" or true/false); departments as string ids; the birthday and the employment date as
// dates (the portal answers a date-only field as a datetime, midnight UTC in its offset).
var userShapes = engine.Shapes{
	Fields: []string{"ID", "XML_ID", "ACTIVE", "NAME", "LAST_NAME", "SECOND_NAME", "TITLE", "EMAIL", "LAST_LOGIN",
		"DATE_REGISTER", "TIME_ZONE", "IS_ONLINE", "TIMESTAMP_X", "LAST_ACTIVITY_DATE", "PERSONAL_GENDER",
		"PERSONAL_PROFESSION", "PERSONAL_WWW", "PERSONAL_BIRTHDAY", "PERSONAL_PHOTO", "PERSONAL_ICQ", "PERSONAL_PHONE",
		"PERSONAL_FAX", "PERSONAL_MOBILE", "PERSONAL_PAGER", "PERSONAL_STREET", "PERSONAL_CITY", "PERSONAL_STATE",
		"PERSONAL_ZIP", "PERSONAL_COUNTRY", "PERSONAL_MAILBOX", "PERSONAL_NOTES", "WORK_PHONE", "WORK_COMPANY",
		"WORK_POSITION", "WORK_DEPARTMENT", "WORK_WWW", "WORK_FAX", "WORK_PAGER", "WORK_STREET", "WORK_MAILBOX",
		"WORK_CITY", "WORK_STATE", "WORK_ZIP", "WORK_COUNTRY", "WORK_PROFILE", "WORK_LOGO", "WORK_NOTES",
		"UF_SKYPE_LINK", "UF_ZOOM", "UF_EMPLOYMENT_DATE", "UF_TIMEMAN", "UF_DEPARTMENT", "UF_INTERESTS", "UF_SKILLS",
		"UF_WEB_SITES", "UF_XING", "UF_LINKEDIN", "UF_TWITTER", "UF_SKYPE", "UF_DISTRICT", "UF_PHONE_INNER", "USER_TYPE"},
	Booleans: []string{"ACTIVE"},
	IDs:      []string{"UF_DEPARTMENT"},
	DateOnly: []string{"PERSONAL_BIRTHDAY", "UF_EMPLOYMENT_DATE"},
}
