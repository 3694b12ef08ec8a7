package bitrix

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The CRM (seed 000 stage 4.7, research/bitrix.md §5.7): companies, contacts, deals and smart
// processes, all read through crm.item.list (the per-type list methods are deprecated), after
// the dictionaries their records name: smart process types, funnels and stages
// (entity_crm_dicts.go). Companies, contacts and deals are one description with three
// parameters (crmEntity); smart processes are the same description read type by type
// (entity_smart.go).
const (
	Companies = "companies"
	Contacts  = "contacts"
	Deals     = "deals"
)

// Entity type ids of the CRM (DOCS api-reference/crm/data-types.md).
const (
	crmLead    = 1
	crmDeal    = 2
	crmContact = 3
	crmCompany = 4
)

// crmNotMigrated is what the CRM entities leave behind (README "Bitrix24: what is not migrated").
var crmNotMigrated = []string{
	"activities (calls, e-mails, meetings, CRM tasks) and timeline entries other than comments (those: crm_comments)",
	"files of custom fields of type file (their portal ids are sent as they are)",
	"leads (entityTypeId 1): links to leads are sent as the portal has them",
}

// crmScan is crm.item.list of one entity type as get reads it: every field (select ['*'] is the
// only way to get the multi-fields container fm), custom fields under their original names
// (useOriginalUfNames=Y: UF_CRM_7_COLOR as userfield.list and userfieldconfig.list name them,
// so that custom field values, enumeration options and renames are matched by name; the default
// camelCase ufCrm7Color names would need a conversion that loses the underscores), ID-chained
// with start=-1 and >id, the batch reference going through items.
func crmScan(entityTypeID int) rest.Scan {
	return rest.Scan{
		Method:   "crm.item.list",
		Params:   map[string]any{"entityTypeId": entityTypeID, "select": []string{"*"}, "useOriginalUfNames": "Y"},
		IDField:  "id",
		RowsPath: []string{"items"},
		Order:    map[string]any{"order": map[string]any{"id": "ASC"}},
		IDListOp: "@",
	}
}

// crmSpec is what differs between companies, contacts and deals.
type crmSpec struct {
	name, help   string
	entityTypeID int
	requires     []string
	// fields is the crm.<type>.userfield.list method of the type's custom fields.
	fields string
	refs   []engine.Ref
}

// crmEntity describes one CRM entity read through crm.item.list.
func crmEntity(s crmSpec) *engine.Entity {
	return &engine.Entity{
		Name:     s.name,
		Help:     s.help,
		Requires: s.requires,
		Lister: &engine.IDScan{Scan: crmScan(s.entityTypeID), CountParams: map[string]any{"select": []string{"id"}},
			Modified: crmModified},
		IDField:  "id",
		Refs:     append(crmRefs(s.entityTypeID), s.refs...),
		Dates:    crmDates,
		Volatile: crmVolatile,
		Shapes:   crmShapes(s.entityTypeID),
		Batch:    50,
		Fields: &engine.CustomFields{Method: s.fields,
			// LANG makes the portal send labels as text in that language instead of null.
			Params: map[string]any{"order": map[string]any{"ID": "ASC"}, "filter": map[string]any{"LANG": "ru"}},
			Naming: &engine.FieldNaming{Prefix: "UF_CRM_", Max: 50}, Links: crmFieldLinks()},
		Finish:      crmFinish,
		NotMigrated: crmNotMigrated,
	}
}

// crmModified are the fields of a CRM item's modification time a delta pass reads by
// (docs/bitrix-delta.md): crm.item.list filters by any field crm.item.fields lists, with > on
// datetimes; updatedTime moves with an edit of the item, lastActivityTime with an activity or a
// timeline comment added to it (crmVolatile: the checksum ignores it, so only this filter sees
// such a change).
var crmModified = []string{"updatedTime", "lastActivityTime"}

// crmDates are the date fields of CRM items; each keeps its offset.
var crmDates = []string{"createdTime", "updatedTime", "movedTime", "lastActivityTime", "begindate", "closedate",
	"birthdate", "lastCommunicationTime"}

// crmShapes are the canonical forms of CRM items' fields (crm.item.fields): the fields every item
// of the type has are sent, null when the portal left them out or sent them empty; yes/no flags as
// booleans (crm.item.* writes "Y"/"N", the classic crm.* methods and some versions true/false);
// amounts as decimal strings (crm.item.* writes 5000, classic crm.* "5000.00"); the date-only
// fields as dates (answered as datetimes shifted by the portal's offset).
func crmShapes(entityTypeID int) engine.Shapes {
	fields := []string{"id", "opened", "categoryId", "assignedById", "createdBy", "updatedBy", "createdTime",
		"updatedTime", "sourceId", "sourceDescription", "comments", "observers"}
	switch entityTypeID {
	case crmContact:
		fields = append(fields, "name", "lastName", "secondName", "honorific", "birthdate", "typeId", "post",
			"companyId", "export")
	case crmCompany:
		fields = append(fields, "title", "companyTypeId", "industry", "employees", "revenue", "currencyId", "isMyCompany")
	case crmDeal:
		fields = append(fields, "title", "typeId", "stageId", "opportunity", "currencyId", "companyId", "contactId",
			"begindate", "closedate", "closed")
	}
	return engine.Shapes{
		Fields: fields,
		Booleans: []string{"opened", "export", "isReturnCustomer", "isRepeatedApproach", "isManualOpportunity", "closed",
			"hasPhone", "hasEmail", "hasImol", "isMyCompany"},
		Decimals: crmMoney,
		DateOnly: []string{"birthdate", "begindate", "closedate"},
		// lastActivityBy is a user's id the portal writes as a number in crm.item.list and as a
		// string in the classic lists; it is volatile, not a reference, so only its form is fixed.
		IDs: []string{"lastActivityBy"},
	}
}

// crmVolatile change with activities, which are not migrated: a new call does not make a deal
// changed.
var crmVolatile = []string{"lastActivityTime", "lastActivityBy", "lastCommunicationTime"}

// crmRefs are the references every CRM item has: its users, its funnel and its stages.
func crmRefs(entityTypeID int) []engine.Ref {
	return []engine.Ref{
		{Field: "assignedById", Name: "responsible", Entity: Users, Optional: true},
		{Field: "createdBy", Name: "creator", Entity: Users, Optional: true},
		{Field: "updatedBy", Entity: Users, Optional: true},
		{Field: "movedBy", Entity: Users, Optional: true},
		{Field: "observers", Entity: Users, Many: true},
		// A portal may have no funnels for a type (ENTITY_TYPE_NOT_SUPPORTED): its items' categoryId
		// then names none, and is sent as null.
		{Field: "categoryId", Name: "funnel", Entity: CRMCategories, Values: categoryKey(entityTypeID), DropGone: true},
		{Field: "stageId", Name: "stage", Entity: CRMStages, Optional: true},
		// A stage deleted from the funnel since the item left it is gone from the dictionary.
		{Field: "previousStageId", Entity: CRMStages, Optional: true, DropGone: true},
	}
}

// categoryKey names an item's funnel as crm_categories keys it: "<entityTypeId>:<id>" (funnel
// ids are only unique within their type; a deal's default funnel is 0). entityTypeID 0 takes the
// type from the row (smart process items).
func categoryKey(entityTypeID int) func(fields map[string]json.RawMessage) []string {
	return func(fields map[string]json.RawMessage) []string {
		cat := engine.Text(fields, "categoryId")
		et := strconv.Itoa(entityTypeID)
		if entityTypeID == 0 {
			et = engine.Text(fields, "entityTypeId")
		}
		if cat == "" || et == "" {
			return nil
		}
		return []string{et + ":" + cat}
	}
}

// crmMoney are the amounts of CRM items and product rows: sent as decimal strings with exactly
// the digits the portal wrote, so that no float on the target's side rounds them.
var crmMoney = []string{"opportunity", "opportunityAccount", "taxValue", "taxValueAccount", "revenue",
	"price", "priceAccount", "priceExclusive", "priceNetto", "priceBrutto", "discountSum"}

// crmFinish completes a CRM item's payload: its funnel as the target's id, its type as the
// target's (smart processes), money as exact decimal strings.
func crmFinish(fields map[string]json.RawMessage, r engine.Record, rf *engine.Refs) error {
	et := crmTypeOf(r.Entity)
	if r.Entity == Smart {
		et = engine.Text(fields, "entityTypeId")
		id, ok := rf.Target(CRMTypes, et)
		if !ok {
			return &engine.UnresolvedError{Field: "entityTypeId", Entity: CRMTypes, SourceID: et}
		}
		fields["entityTypeId"] = engine.MustJSON(id)
	}
	if cat := engine.Text(fields, "categoryId"); cat != "" {
		id, ok := rf.Target(CRMCategories, et+":"+cat)
		switch {
		case ok:
			fields["categoryId"] = engine.MustJSON(id)
		case rf.Gone(CRMCategories, et+":"+cat):
			fields["categoryId"] = json.RawMessage("null")
		default:
			return &engine.UnresolvedError{Field: "categoryId", Entity: CRMCategories, SourceID: et + ":" + cat}
		}
	}
	return decimalStrings(fields, crmMoney)
}

// crmTypeOf is the entityTypeId of a CRM entity's items.
func crmTypeOf(entity string) string {
	switch entity {
	case Companies:
		return strconv.Itoa(crmCompany)
	case Contacts:
		return strconv.Itoa(crmContact)
	case Deals:
		return strconv.Itoa(crmDeal)
	}
	return ""
}

// decimalStrings rewrites the named number fields as strings holding the same digits.
func decimalStrings(fields map[string]json.RawMessage, names []string) error {
	for _, name := range names {
		raw, ok := fields[name]
		if !ok || engine.IsEmptyValue(raw) || raw[0] == '"' {
			continue
		}
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("%s: %s is not an amount", name, raw)
		}
		fields[name] = engine.MustJSON(n.String())
	}
	return nil
}

func companiesEntity() *engine.Entity {
	return crmEntity(crmSpec{name: Companies, entityTypeID: crmCompany, fields: "crm.company.userfield.list",
		help:     "CRM companies (users and crm_categories must be imported and verified first)",
		requires: []string{Users, CRMCategories},
		refs:     []engine.Ref{{Field: "mycompanyId", Entity: Companies, Optional: true, DropGone: true}}})
}

func contactsEntity() *engine.Entity {
	ent := crmEntity(crmSpec{name: Contacts, entityTypeID: crmContact, fields: "crm.contact.userfield.list",
		help:     "CRM contacts, with all their companies (companies must be imported and verified first)",
		requires: []string{Users, CRMCategories, Companies},
		refs: []engine.Ref{
			{Field: "companyId", Name: "company", Entity: Companies, Optional: true, DropGone: true},
			{Field: "companyIds", Name: "companies", Entity: Companies, Many: true, DropGone: true},
		}})
	scan := ent.Lister.(*engine.IDScan)
	scan.Complete, scan.CompleteMethod = completeContacts, contactCompaniesMethod // crm_contact_companies.go
	return ent
}

func dealsEntity() *engine.Entity {
	return crmEntity(crmSpec{name: Deals, entityTypeID: crmDeal, fields: "crm.deal.userfield.list",
		help:     "CRM deals in their funnels and stages, with company and contacts (contacts must be imported and verified first; product rows: deal_products)",
		requires: []string{Users, CRMCategories, Companies, Contacts},
		refs:     crmClientRefs})
}

// crmClientRefs are the links of a deal or a smart process item to its clients: a company and
// contacts (many to many), and the own company it is sold by.
var crmClientRefs = []engine.Ref{
	{Field: "companyId", Name: "company", Entity: Companies, Optional: true, DropGone: true},
	{Field: "contactId", Name: "contact", Entity: Contacts, Optional: true, DropGone: true},
	{Field: "contactIds", Name: "contacts", Entity: Contacts, Many: true, DropGone: true},
	{Field: "mycompanyId", Name: "own company", Entity: Companies, Optional: true, DropGone: true},
}
