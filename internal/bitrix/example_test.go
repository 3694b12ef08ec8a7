package bitrix_test

import (
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The worked example of docs/adding-an-entity.md: a flat entity is one value. (Departments are
// not part of the migration; the example shows the shape, and this test keeps it compiling and
// valid.)
func departmentsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     "departments",
		Help:     "the company structure (users must be imported and verified first)",
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
	}
}

func ExampleNewRegistry() {
	reg, err := engine.NewRegistry(append(bitrix.Catalog().All(), departmentsEntity())...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.CommandNames())
	// Output: [users groups chats feed tasks crm_types crm_categories companies contacts deals deal_products crm_comments smart workflows departments]
}
