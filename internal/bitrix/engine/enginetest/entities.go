package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The synthetic entities, named apart from the catalog's so that a test can never pass by
// reading the catalog by mistake.
const (
	// People are the portal's users, read by an ID-chained scan (user.get), with custom fields.
	People = "people"
	// Teams are workgroups (sonet_group.get), owned by people; TeamMembers their members, a
	// child fetched with every page of teams (sonet_group.user.get).
	Teams       = "teams"
	TeamMembers = "team_members"
	// Posts are live feed posts, read by offset pages (log.blogpost.get); PostAudiences, a
	// child walked per key afterwards, say which audience each post went to.
	Posts         = "posts"
	PostAudiences = "post_audiences"
	// Chores are tasks (tasks.task.list): a subtask names its parent task (a self-reference).
	Chores = "chores"
	// Firms are CRM companies (crm.item.list), and FirmNotes their timeline comments, read one
	// listing per firm (crm.timeline.comment.list).
	Firms     = "firms"
	FirmNotes = "firm_notes"
	// Flows are workflow templates (offset pages); FlowRuns their running workflows, a child with
	// a listing of its own that names its parent by a field (TEMPLATE_ID).
	Flows    = "flows"
	FlowRuns = "flow_runs"
)

// Registry returns a new registry of the synthetic entities. Each call builds new values, so a
// test may change its entities without touching another test's.
func Registry() *engine.Registry {
	r, err := engine.NewRegistry(Entities()...)
	if err != nil {
		panic("enginetest: the synthetic registry is inconsistent: " + err.Error())
	}
	return r
}

// Entities returns new values of every synthetic entity, for a registry of a test's own.
func Entities() []*engine.Entity {
	return []*engine.Entity{PeopleEntity(), TeamsEntity(), TeamMembersEntity(), PostsEntity(), PostAudiencesEntity(),
		ChoresEntity(), FirmsEntity(), FirmNotesEntity(), FlowsEntity(), FlowRunsEntity()}
}

// PeopleEntity describes People: an ID-chained scan with custom fields, dates and fields that
// change without the record changing.
func PeopleEntity() *engine.Entity {
	return &engine.Entity{
		Name: People,
		Help: "the portal's users",
		Lister: &engine.IDScan{Scan: rest.UsersScan(map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}}),
			CountParams: map[string]any{"select": []string{"ID"}}},
		Dates: []string{"DATE_REGISTER", "LAST_LOGIN", "TIMESTAMP_X", "LAST_ACTIVITY_DATE",
			"PERSONAL_BIRTHDAY", "UF_EMPLOYMENT_DATE"},
		Volatile: []string{"IS_ONLINE", "LAST_LOGIN", "LAST_ACTIVITY_DATE"},
		Shapes:   engine.Shapes{Booleans: []string{"ACTIVE"}, IDs: []string{"UF_DEPARTMENT"}, DateOnly: []string{"PERSONAL_BIRTHDAY", "UF_EMPLOYMENT_DATE"}},
		Batch:    50,
		Fields:   &engine.CustomFields{Method: "user.userfield.list", Params: map[string]any{"order": map[string]string{"ID": "ASC"}}},
	}
}

// noTeamFields is why fields-get and fields-set do nothing for teams.
const noTeamFields = "sonet_group has no userfield methods"

// TeamsEntity describes Teams: an ID-chained scan whose records refer to people.
func TeamsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Teams,
		Help:     "workgroups and their members",
		Requires: []string{People},
		Lister:   &engine.IDScan{Scan: rest.GroupsScan(map[string]any{"IS_ADMIN": "Y"})},
		Refs:     []engine.Ref{{Field: "OWNER_ID", Entity: People, Name: "owner"}},
		Dates:    []string{"DATE_CREATE", "DATE_UPDATE", "DATE_ACTIVITY"},
		Volatile: []string{"DATE_ACTIVITY", "NUMBER_OF_MEMBERS"},
		Batch:    20,
		NoFields: noTeamFields,
	}
}

// TeamMembersEntity describes TeamMembers: a child fetched with every page of its parent.
func TeamMembersEntity() *engine.Entity {
	return &engine.Entity{
		Name:        TeamMembers,
		Noun:        "memberships",
		Parent:      Teams,
		Fetch:       &engine.ChildFetch{Method: "sonet_group.user.get", ParentParam: "ID", KeyField: "USER_ID", ParentGone: teamGone},
		ParentField: "GROUP_ID",
		Refs:        []engine.Ref{{Field: "USER_ID", Entity: People}},
		Batch:       100,
		NoFields:    noTeamFields,
	}
}

// teamGone recognises sonet_group.user.get's answer for a group that does not exist.
func teamGone(err error) bool {
	apiErr, ok := errors.AsType[*rest.APIError](err)
	return ok && (strings.Contains(apiErr.Description, "group not found") ||
		strings.Contains(apiErr.Description, "Wrong socialnetwork group ID"))
}

// PostsEntity describes Posts: offset pages of a method that takes no ID filter, asked for by
// id before a post counts as deleted.
func PostsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Posts,
		Noun:     "posts",
		Help:     "live feed posts and their audiences",
		Requires: []string{People, Teams},
		Lister: &engine.OffsetPages{List: rest.List{Method: "log.blogpost.get"},
			ByID: func(id string) map[string]any { return map[string]any{"POST_ID": id} }},
		Refs:     []engine.Ref{{Field: "AUTHOR_ID", Entity: People, Name: "author"}},
		Dates:    []string{"DATE_PUBLISH"},
		Volatile: []string{"NUM_COMMENTS", "HAS_COMMENT_IMAGES"},
		Batch:    50,
		NoFields: "the feed has no custom fields here",
	}
}

// PostAudiencesEntity describes PostAudiences: a child walked per key (all employees, each team,
// each person), each key's posts paged by start.
func PostAudiencesEntity() *engine.Entity {
	return &engine.Entity{
		Name:   PostAudiences,
		Noun:   "audiences",
		Parent: Posts,
		Walk: &engine.KeyWalk{Method: "log.blogpost.get", Keys: audiences, Page: audiencePage, NoMe: true,
			Params: func(key, cursor string) any {
				start, _ := strconv.Atoi(cursor)
				return map[string]any{"LOG_RIGHTS": []string{key}, "start": start}
			},
			How: "log.blogpost.get LOG_RIGHTS per audience",
			PlanKeys: func(_ context.Context, _ engine.Env, planned map[string]int64) (int64, error) {
				return 1 + planned[Teams] + planned[People], nil
			}},
		Refs: []engine.Ref{{Field: "code", Entity: People, Name: "person", Values: func(f map[string]json.RawMessage) []string {
			return audienceID(engine.Text(f, "code"), "U")
		}}, {Field: "code", Entity: Teams, Name: "team", Values: func(f map[string]json.RawMessage) []string {
			return audienceID(engine.Text(f, "code"), "SG")
		}}},
		Batch:    100,
		NoFields: "the feed has no custom fields here",
		Payload:  audiencePayload,
	}
}

// audiences are the keys of the audience walk: all employees, every team and every person read.
func audiences(ctx context.Context, env engine.Env) ([]string, error) {
	out := []string{"UA"}
	for _, a := range []struct{ entity, prefix string }{{Teams, "SG"}, {People, "U"}} {
		ids, err := env.Store().SourceIDs(ctx, a.entity)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			out = append(out, a.prefix+id)
		}
	}
	return out, nil
}

// audienceID is the id in an audience code of the given kind ("SG5" -> 5).
func audienceID(code, prefix string) []string {
	id, ok := strings.CutPrefix(code, prefix)
	if !ok || code == "UA" || id == "" || strings.HasPrefix(id, "G") {
		return nil
	}
	return []string{id}
}

// audiencePage makes the posts one audience's listing returned into records; an author's right
// to their own post is no audience.
func audiencePage(p engine.WalkPage) ([]engine.WalkRow, string, bool, error) {
	rows, err := p.Answer.Rows()
	if err != nil {
		return nil, "", false, err
	}
	var out []engine.WalkRow
	for _, row := range rows {
		f, err := engine.FieldsOf(row)
		if err != nil {
			return nil, "", false, err
		}
		post := engine.Text(f, "ID")
		if post == "" {
			return nil, "", false, fmt.Errorf("post without ID: %.200s", row)
		}
		if p.Key == "U"+engine.Text(f, "AUTHOR_ID") {
			continue
		}
		out = append(out, engine.WalkRow{SourceID: post + ":" + p.Key, Parent: post,
			Payload: engine.MustJSON(map[string]string{"post_id": post, "code": p.Key})})
	}
	if p.Answer.Next == nil || len(rows) == 0 {
		return out, "", true, nil
	}
	return out, strconv.Itoa(*p.Answer.Next), false, nil
}

// audiencePayload sends an audience with its post's, person's or team's target id.
func audiencePayload(r engine.Record, rf *engine.Refs) (json.RawMessage, error) {
	f, err := engine.FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	code := engine.Text(f, "code")
	post, ok := rf.Target(Posts, r.ParentSourceID)
	if !ok {
		return nil, &engine.UnresolvedError{Field: "POST_ID", Entity: Posts, SourceID: r.ParentSourceID}
	}
	out := map[string]any{"POST_ID": post, "CODE": code}
	for _, a := range []struct{ entity, prefix string }{{People, "U"}, {Teams, "SG"}} {
		for _, id := range audienceID(code, a.prefix) {
			tid, ok := rf.Target(a.entity, id)
			if !ok {
				return nil, &engine.UnresolvedError{Field: "code", Entity: a.entity, SourceID: id}
			}
			out["TARGET_ID"] = tid
		}
	}
	return engine.MustJSON(out), nil
}

// ChoresEntity describes Chores: an ID-chained scan with camelCase rows under "tasks", an id
// field that filters under another name, and a self-reference (a subtask's parent task, which
// may be listed after it).
func ChoresEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Chores,
		Help:     "tasks and their subtasks",
		Requires: []string{People},
		Lister: &engine.IDScan{Scan: rest.Scan{Method: "tasks.task.list",
			Params:      map[string]any{"select": []string{"ID", "PARENT_ID", "TITLE", "CREATED_BY", "RESPONSIBLE_ID", "STATUS", "CREATED_DATE", "CHANGED_DATE"}},
			FilterParam: "filter", IDField: "id", FilterField: "ID", RowsPath: []string{"tasks"},
			Order: map[string]any{"order": map[string]any{"ID": "asc"}}},
			CountParams: map[string]any{"select": []string{"ID"}}},
		IDField: "id",
		Refs: []engine.Ref{
			{Field: "createdBy", Entity: People, Name: "creator"},
			{Field: "responsibleId", Entity: People, Name: "responsible"},
			// A subtask of a task the webhook's user cannot see goes without the link.
			{Field: "parentId", Entity: Chores, Name: "parent task", Optional: true, DropGone: true},
		},
		SelfRef:  "parentId",
		Dates:    []string{"createdDate", "changedDate"},
		Volatile: []string{"activityDate"},
		Batch:    50,
		NoFields: "the synthetic tasks read no custom fields",
	}
}

// FirmsEntity describes Firms: crm.item.list of companies, an ID-chained scan keyed by "id".
func FirmsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Firms,
		Help:     "CRM companies and their timeline comments",
		Requires: []string{People},
		Lister: &engine.IDScan{Scan: rest.Scan{Method: "crm.item.list",
			Params:  map[string]any{"entityTypeId": 4, "select": []string{"*"}, "useOriginalUfNames": "Y"},
			IDField: "id", RowsPath: []string{"items"}, Order: map[string]any{"order": map[string]any{"id": "ASC"}}, IDListOp: "@"},
			CountParams: map[string]any{"select": []string{"id"}}},
		IDField: "id",
		Refs: []engine.Ref{{Field: "assignedById", Name: "responsible", Entity: People, Optional: true},
			{Field: "createdBy", Name: "creator", Entity: People, Optional: true}},
		Dates:    []string{"createdTime", "updatedTime", "movedTime", "lastActivityTime"},
		Volatile: []string{"lastActivityTime", "lastActivityBy", "lastCommunicationTime"},
		Batch:    50,
		NoFields: "the synthetic companies read no custom fields",
	}
}

// FirmNotesEntity describes FirmNotes: one listing per firm, a command of its own after them.
func FirmNotesEntity() *engine.Entity {
	return &engine.Entity{
		Name:     FirmNotes,
		Noun:     "timeline comments",
		Help:     "timeline comments of the firms (one call per 50 firms)",
		Requires: []string{People, Firms},
		Lister: &engine.PerRecord{Of: []string{Firms}, Method: "crm.timeline.comment.list",
			Params: func(_, id string) map[string]any {
				return map[string]any{"filter": map[string]any{"ENTITY_ID": id, "ENTITY_TYPE": "company"},
					"select": []string{"ID", "CREATED", "ENTITY_ID", "ENTITY_TYPE", "AUTHOR_ID", "COMMENT"},
					"order":  map[string]any{"ID": "ASC"}}
			},
			Gone: recordGone},
		Refs: []engine.Ref{{Field: "AUTHOR_ID", Name: "author", Entity: People, Optional: true},
			{Field: "ENTITY_ID", Name: "firm", Entity: Firms}},
		Dates:    []string{"CREATED"},
		Batch:    100,
		NoFields: "timeline comments have no custom fields",
	}
}

// recordGone recognises the answer for a record the portal no longer has.
func recordGone(err error) bool {
	if rest.HasCode(err, "NOT_FOUND") {
		return true
	}
	apiErr, ok := errors.AsType[*rest.APIError](err)
	return ok && apiErr.Code == "" && strings.EqualFold(strings.TrimSpace(apiErr.Description), "Not found")
}

// FlowsEntity describes Flows: offset pages ordered by ID.
func FlowsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Flows,
		Noun:     "workflow templates",
		Help:     "workflow templates and their running workflows",
		Requires: []string{People},
		Lister: &engine.OffsetPages{List: rest.List{Method: "bizproc.workflow.template.list",
			Params: map[string]any{"SELECT": []string{"ID", "MODULE_ID", "ENTITY", "DOCUMENT_TYPE", "NAME", "MODIFIED", "USER_ID"},
				"ORDER": map[string]any{"ID": "ASC"}}}},
		Refs:     []engine.Ref{{Field: "USER_ID", Name: "author", Entity: People, Optional: true}},
		Dates:    []string{"MODIFIED"},
		Batch:    20,
		NoFields: "workflow templates have no custom fields",
	}
}

// FlowRunsEntity describes FlowRuns: a child with a listing of its own, read right after its
// parent's, naming its parent by TEMPLATE_ID.
func FlowRunsEntity() *engine.Entity {
	return &engine.Entity{
		Name:   FlowRuns,
		Noun:   "running workflows",
		Parent: Flows,
		Lister: &engine.OffsetPages{List: rest.List{Method: "bizproc.workflow.instances",
			Params: map[string]any{"SELECT": []string{"ID", "MODIFIED", "MODULE_ID", "ENTITY", "DOCUMENT_ID",
				"STARTED", "STARTED_BY", "TEMPLATE_ID"}, "ORDER": map[string]any{"ID": "ASC"}}}},
		ParentKey:   "TEMPLATE_ID",
		ParentField: "TEMPLATE_ID",
		Refs:        []engine.Ref{{Field: "STARTED_BY", Entity: People, Optional: true}},
		Dates:       []string{"STARTED", "MODIFIED"},
		Volatile:    []string{"MODIFIED", "OWNED_UNTIL"},
		Batch:       100,
		NoFields:    "workflows have no custom fields",
	}
}
