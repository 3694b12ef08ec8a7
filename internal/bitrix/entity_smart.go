package bitrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// Smart is the entity of every smart process's items (seed 000 stage 4.7). The types are
// discovered at run time (crm_types), so they cannot each be a registered entity with a command
// of its own: `ingest bitrix smart PHASE` migrates the items of every type under one lock, each
// type read by an ID scan of its own (smartItems) and each item keyed "<entityTypeId>:<id>" (ids
// are only unique within a type).
const Smart = "smart"

func smartEntity() *engine.Entity {
	return &engine.Entity{
		Name:     Smart,
		Noun:     "smart process items",
		Help:     "items of every smart process, in their funnels and stages (crm_types, crm_categories, companies, contacts and deals must be imported and verified first)",
		Requires: []string{Users, CRMTypes, CRMCategories, Companies, Contacts, Deals},
		Lister:   smartItems{},
		IDField:  "id",
		// An item is "<entityTypeId>:<id>": ids are unique only within a type.
		IDFormat: "ENTITYTYPEID:ID",
		Refs: append(append(crmRefs(0), crmClientRefs...),
			engine.Ref{Field: "entityTypeId", Name: "type", Entity: CRMTypes, Values: func(f map[string]json.RawMessage) []string {
				return []string{engine.Text(f, "entityTypeId")}
			}},
			// A smart process item's parent records: parentId<entityTypeId>.
			engine.Ref{Field: "parentId2", Name: "parent deal", Entity: Deals, Optional: true, DropGone: true},
			engine.Ref{Field: "parentId3", Name: "parent contact", Entity: Contacts, Optional: true, DropGone: true},
			engine.Ref{Field: "parentId4", Name: "parent company", Entity: Companies, Optional: true, DropGone: true},
		),
		Dates:    crmDates,
		Shapes:   crmShapes(0),
		Volatile: crmVolatile,
		Batch:    50,
		// userfieldconfig.list lists the fields of every module entity; the smart processes'
		// are those of entities CRM_<type id>.
		Fields: &engine.CustomFields{Method: "userfieldconfig.list", Params: map[string]any{"moduleId": "crm", "select": []string{"*"}},
			RowsPath: []string{"fields"}, Paged: true, Normalize: smartFieldRow, Links: crmFieldLinks(),
			Naming: &engine.FieldNaming{Prefix: "UF_CRM_", Max: 50, Split: smartFieldSplit}},
		Finish: crmFinish,
		NotMigrated: append([]string{"links between items of two smart processes other than through parentId2/3/4 " +
			"(parentId<type> of another smart process is sent as the portal has it)"}, crmNotMigrated...),
	}
}

var smartEntityID = regexp.MustCompile(`^CRM_(\d+)$`)

// smartFieldRow turns a userfieldconfig.list row (camelCase, research/bitrix.md §5.7) into
// user.userfield.list's shape, which fields-set and the option mapping read; rows of other
// entities (CRM_COMPANY, ...) are not the smart processes'.
func smartFieldRow(row json.RawMessage) (json.RawMessage, bool, error) {
	var uf struct {
		ID, XMLID, Sort                             json.RawMessage
		EntityID                                    string `json:"entityId"`
		FieldName                                   string `json:"fieldName"`
		UserTypeID                                  string `json:"userTypeId"`
		Multiple, Mandatory, ShowFilter, ShowInList string
		EditInList, IsSearchable                    string
		Settings                                    json.RawMessage
		EditFormLabel, ListColumnLabel              json.RawMessage
		ListFilterLabel, ErrorMessage, HelpMessage  json.RawMessage
		Enum                                        []struct {
			ID, Sort   json.RawMessage
			Value, Def string
			XMLID      string `json:"xmlId"`
		}
	}
	if err := json.Unmarshal(row, &uf); err != nil {
		return nil, false, fmt.Errorf("decode userfieldconfig row: %w", err)
	}
	if !smartEntityID.MatchString(uf.EntityID) {
		return nil, false, nil
	}
	list := []map[string]any{}
	for _, o := range uf.Enum {
		list = append(list, map[string]any{"ID": o.ID, "VALUE": o.Value, "DEF": o.Def, "SORT": o.Sort, "XML_ID": o.XMLID})
	}
	out := map[string]any{
		"ID": uf.ID, "ENTITY_ID": uf.EntityID, "FIELD_NAME": uf.FieldName, "USER_TYPE_ID": uf.UserTypeID,
		"XML_ID": uf.XMLID, "SORT": uf.Sort, "MULTIPLE": uf.Multiple, "MANDATORY": uf.Mandatory,
		"SHOW_FILTER": uf.ShowFilter, "SHOW_IN_LIST": uf.ShowInList, "EDIT_IN_LIST": uf.EditInList,
		"IS_SEARCHABLE": uf.IsSearchable, "SETTINGS": uf.Settings, "EDIT_FORM_LABEL": uf.EditFormLabel,
		"LIST_COLUMN_LABEL": uf.ListColumnLabel, "LIST_FILTER_LABEL": uf.ListFilterLabel,
		"ERROR_MESSAGE": uf.ErrorMessage, "HELP_MESSAGE": uf.HelpMessage, "LIST": list,
	}
	for k, v := range out {
		if raw, ok := v.(json.RawMessage); ok && len(raw) == 0 {
			out[k] = nil
		}
	}
	b, err := json.Marshal(out)
	return b, true, err
}

var smartFieldName = regexp.MustCompile(`^UF_CRM_(\d+)_(.+)$`)

// smartFieldSplit names a smart process's field on the target: its code after the type's
// prefix, and the prefix of the same type on the target, UF_CRM_<the type's target id>_.
func smartFieldSplit(ctx context.Context, st engine.Store, name string) (code, prefix string, err error) {
	m := smartFieldName.FindStringSubmatch(name)
	if m == nil {
		return "", "", fmt.Errorf("%s is not named UF_CRM_<type id>_<code>", name)
	}
	target, err := st.TargetIDByField(ctx, engine.FieldMatch{Entity: CRMTypes, Field: "id", Value: m[1]})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", fmt.Errorf("its smart process type (id %s) is not imported: run `ingest bitrix crm_types run` first", m[1])
	}
	if err != nil {
		return "", "", fmt.Errorf("look up smart process type %s: %w", m[1], err)
	}
	return m[2], "UF_CRM_" + target + "_", nil
}
