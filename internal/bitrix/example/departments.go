// Package example is the worked example of docs/adding-an-entity.md: departments, a parent with
// a child and a flag of its own, added to the catalog without touching the engine or cmd/ingest.
// Departments are not part of the migration; the package lives outside package bitrix, so the
// example uses the exported API only, and its tests keep it compiling, valid and
// conformance-tested against the fake portal's department.get.
package example

import (
	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Registry is the catalog plus the example's entities, in migration order: departments after
// the users they require.
func Registry() *engine.Registry {
	reg, err := engine.NewRegistry(append(bitrix.Catalog().All(), departmentsEntity(), departmentMembersEntity())...)
	if err != nil {
		panic("example: the worked example is inconsistent: " + err.Error())
	}
	return reg
}

func departmentsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     "departments",
		Help:     "the company structure and its members (users must be imported and verified first)",
		Requires: []string{bitrix.Users},
		// department.get takes top-level SORT and ORDER, a filter by ID and start=-1.
		Lister: &engine.IDScan{Scan: rest.Scan{
			Method:      "department.get",
			FilterParam: "FILTER",
			Order:       map[string]any{"SORT": "ID", "ORDER": "ASC"},
		}},
		Refs: []engine.Ref{{Field: "UF_HEAD", Entity: bitrix.Users, Name: "head"},
			{Field: "PARENT", Entity: "departments", Name: "parent department", Optional: true}},
		// A department may be listed before the department it belongs to: parents go first.
		SelfRef:  "PARENT",
		Batch:    50,
		NoFields: "departments have no custom fields of their own",
		// `ingest bitrix departments set --headless-departments`: a department whose head left
		// (UF_HEAD empty) goes without one instead of failing.
		Flags: []engine.Flag{{
			Name:   "headless-departments",
			Env:    "BITRIX_HEADLESS_DEPARTMENTS",
			Help:   "send a department without a head (UF_HEAD empty) with none, instead of failing it",
			Phases: []engine.Phase{engine.PhaseSet},
			Set: func(e *engine.Entity, _ string) error {
				for i := range e.Refs {
					if e.Refs[i].Field == "UF_HEAD" {
						e.Refs[i].Optional = true
					}
				}
				return nil
			},
		}},
	}
}

// departmentMembersEntity is the departments' child: who works in each, read with every page of
// departments.
func departmentMembersEntity() *engine.Entity {
	return &engine.Entity{
		Name:   "department_members",
		Noun:   "memberships",
		Parent: "departments",
		// One user.get per department, all of a page's departments in one batch. ChildFetch
		// takes one answer a parent: user.get answers 50 users, so departments of more would
		// be walked instead (a KeyWalk, as the feed's comments are).
		Fetch: &engine.ChildFetch{Method: "user.get", KeyField: "ID", Params: func(department string) any {
			return map[string]any{"FILTER": map[string]any{"UF_DEPARTMENT": department}, "ADMIN_MODE": true}
		}},
		// A membership is "<department>:<user>": show bitrix and status set name it so.
		IDFormat:    "DEPARTMENT:USER",
		ParentField: "DEPARTMENT_ID",
		Refs:        []engine.Ref{{Field: "ID", Entity: bitrix.Users, Name: "member"}},
		Batch:       100,
		NoFields:    "memberships have no custom fields",
	}
}
