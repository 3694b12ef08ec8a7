package bitrix

import (
	"encoding/json"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The CRM's dictionaries, migrated before the records that name them: smart process types, and
// the funnels (categories) of every CRM type with their stages. A deal's stage is meaningless
// without its funnel, so both are entities of their own, imported (created on the target where
// it has none: the target answers the id of a funnel or stage it already has, such as its
// default funnel, docs/target-import-api.md) and verified before companies, contacts, deals and
// smart process items, which translate categoryId and stageId through the id map.
const (
	CRMTypes      = "crm_types"
	CRMCategories = "crm_categories"
	CRMStages     = "crm_stages"
)

func crmTypesEntity() *engine.Entity {
	return &engine.Entity{
		Name:     CRMTypes,
		Help:     "CRM smart process types (users must be imported and verified first)",
		Requires: []string{Users},
		// crm.type.list has no ID range filter worth scanning: a portal has a few dozen types.
		Lister: &engine.OffsetPages{List: rest.List{Method: "crm.type.list", RowsPath: []string{"types"},
			Params: map[string]any{"order": map[string]any{"id": "ASC"}}},
			Unfiltered: "a portal has a few dozen smart process types, one page: a page filtered by updatedTime costs the same call, " +
				"and only the whole list shows a type deleted"},
		// Items name their type by entityTypeId (a type's id is something else, used only to
		// name its custom fields: UF_CRM_<id>_...), so types are keyed by it.
		IDField: "entityTypeId",
		Refs: []engine.Ref{{Field: "createdBy", Entity: Users, Optional: true},
			{Field: "updatedBy", Entity: Users, Optional: true}},
		Dates:    []string{"createdTime", "updatedTime"},
		Batch:    20,
		NoFields: "smart process types have no custom fields of their own (their items do: see smart)",
	}
}

func crmCategoriesEntity() *engine.Entity {
	return &engine.Entity{
		Name:     CRMCategories,
		Help:     "CRM funnels (categories) of companies, contacts, deals and every smart process, and their stages (crm_types must be imported and verified first)",
		Requires: []string{CRMTypes},
		Lister:   funnelWalker{},
		// A funnel is "<entityTypeId>:<id>": ids are unique only within a type.
		Refs:     []engine.Ref{{Field: "entityTypeId", Entity: CRMTypes, Values: smartTypeOf}},
		Batch:    50,
		Finish:   categoryFinish,
		IDFormat: "ENTITYTYPEID:ID",
		NoFields: "funnels have no custom fields",
		Verify:   verifyStages,
	}
}

func crmStagesEntity() *engine.Entity {
	return &engine.Entity{
		Name:   CRMStages,
		Noun:   "stages",
		Parent: CRMCategories,
		// A stage is its STATUS_ID (NEW, C1:NEW, DT1038_21:NEW), unique across the portal's
		// funnels and what items name in stageId; CATEGORY_ID receives the funnel's target id.
		IDField:     "STATUS_ID",
		IDFormat:    "STATUS_ID",
		ParentField: "CATEGORY_ID",
		Batch:       100,
		NoFields:    "stages have no custom fields",
	}
}

// smartTypeOf is the type of a smart process's funnel, which crm_types must map; the built-in
// types (deals, contacts, companies) have no record there.
func smartTypeOf(fields map[string]json.RawMessage) []string {
	if et := engine.Text(fields, "entityTypeId"); isSmartType(et) {
		return []string{et}
	}
	return nil
}

// isSmartType reports whether an entityTypeId is a smart process's (they start at 128; the
// built-in types are below 100).
func isSmartType(et string) bool {
	return len(et) >= 3 && et != "" && et[0] != '0'
}

// categoryFinish gives a smart process's funnel its type's target id.
func categoryFinish(fields map[string]json.RawMessage, _ engine.Record, rf *engine.Refs) error {
	et := engine.Text(fields, "entityTypeId")
	if !isSmartType(et) {
		return nil
	}
	id, ok := rf.Target(CRMTypes, et)
	if !ok {
		return &engine.UnresolvedError{Field: "entityTypeId", Entity: CRMTypes, SourceID: et}
	}
	fields["entityTypeId"] = engine.MustJSON(id)
	return nil
}
