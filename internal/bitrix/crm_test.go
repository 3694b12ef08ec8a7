package bitrix_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// crmOptions is a small portal with every kind of CRM record and workflows.
func crmOptions(seed uint64) bitrixfake.Options {
	return bitrixfake.Options{Users: 60, Seed: seed, Companies: 40, Contacts: 60, Deals: 130, SmartItems: 30, Workflows: 10}
}

// crmEntities are the commands of the CRM and workflows, in migration order, after users.
var crmEntities = []string{bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts, bitrix.Deals,
	bitrix.DealProducts, bitrix.CRMComments, bitrix.Smart, bitrix.Workflows}

// migrateCRM runs users and every CRM and workflow entity through all phases.
func (v *env) migrateCRM(e *engine.Engine) {
	v.t.Helper()
	for _, entity := range append([]string{bitrix.Users}, crmEntities...) {
		if err := e.Run(v.ctx, entity); err != nil {
			v.t.Fatalf("run %s: %v", entity, err)
		}
	}
}

// onTarget returns the target's payload of a record, decoded.
func (v *env) onTarget(entity, sourceID string) map[string]json.RawMessage {
	v.t.Helper()
	rec, ok := v.target.Lookup(entity, "source:"+entity+":"+sourceID)
	if !ok {
		v.t.Fatalf("the target has no %s %s", entity, sourceID)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(rec.Payload, &out); err != nil {
		v.t.Fatal(err)
	}
	return out
}

func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func TestCRMAndWorkflowsEndToEnd(t *testing.T) {
	t.Parallel()
	v := newEnv(t, crmOptions(11))
	e := v.engine()
	v.migrateCRM(e)
	crm := v.portal.CRM()
	templates, instances, tasks := v.portal.WorkflowCounts()
	for entity, want := range map[string]int{
		bitrix.CRMTypes: crm.SmartTypes, bitrix.CRMCategories: crm.Categories, bitrix.CRMStages: crm.Stages,
		bitrix.Companies: crm.Companies, bitrix.Contacts: crm.Contacts, bitrix.Deals: crm.Deals,
		bitrix.DealProducts: crm.ProductRows, bitrix.Smart: crm.SmartItems, bitrix.CRMComments: v.portal.CommentCount(),
		bitrix.Workflows: templates, bitrix.WorkflowInstances: instances, bitrix.WorkflowTasks: tasks,
	} {
		if got := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND status = 'IMPORT_OK'`, entity); got != want || want == 0 {
			t.Errorf("%s: %d IMPORT_OK, the portal has %d", entity, got, want)
		}
		if got := v.target.Count(entity); got != want {
			t.Errorf("%s: the target holds %d, want %d", entity, got, want)
		}
	}
	if s := v.target.Stats(); s.Duplicates != 0 || s.Failed != 0 {
		t.Errorf("target stats %+v", s)
	}

	deals := v.portal.DealIDs()
	// A deal in its funnel and stage, with its company and several contacts, by target ids.
	for _, id := range deals {
		src := v.portal.DealRow(id)
		var contacts []int
		_ = json.Unmarshal(src["contactIds"], &contacts)
		if len(contacts) < 2 || id == deals[1] {
			continue
		}
		got := v.onTarget(bitrix.Deals, strconv.Itoa(id))
		cat := "2:" + string(src["categoryId"])
		if want := v.targetID(bitrix.CRMCategories, cat); jsonText(got["categoryId"]) != want {
			t.Errorf("deal %d categoryId = %s, want funnel %s's target id %s", id, got["categoryId"], cat, want)
		}
		stage := jsonText(src["stageId"])
		if want := v.targetID(bitrix.CRMStages, stage); jsonText(got["stageId"]) != want {
			t.Errorf("deal %d stageId = %s, want stage %s's target id %s", id, got["stageId"], stage, want)
		}
		var wantContacts []string
		for _, c := range contacts {
			wantContacts = append(wantContacts, v.targetID(bitrix.Contacts, strconv.Itoa(c)))
		}
		if want, _ := json.Marshal(wantContacts); string(got["contactIds"]) != string(want) {
			t.Errorf("deal %d contactIds = %s, want %s", id, got["contactIds"], want)
		}
		if want := v.targetID(bitrix.Companies, string(src["companyId"])); jsonText(got["companyId"]) != want {
			t.Errorf("deal %d companyId = %s, want %s", id, got["companyId"], want)
		}
		if want := v.targetID(bitrix.Users, string(src["assignedById"])); jsonText(got["assignedById"]) != want {
			t.Errorf("deal %d assignedById = %s, want %s", id, got["assignedById"], want)
		}
		if jsonText(got["currencyId"]) != jsonText(src["currencyId"]) || got["opportunity"][0] != '"' {
			t.Errorf("deal %d money %s %s, want the amount as a decimal string with %s", id, got["opportunity"], got["currencyId"], src["currencyId"])
		}
		if got["createdTime"] == nil || !strings.Contains(string(got["createdTime"]), "+03:00") {
			t.Errorf("deal %d createdTime %s, want the portal's offset kept", id, got["createdTime"])
		}
		break
	}
	// The deal whose company was deleted is imported without the link, and verify says so.
	lost := v.onTarget(bitrix.Deals, strconv.Itoa(deals[1]))
	if string(lost["companyId"]) != "null" {
		t.Errorf("deal %d of the deleted company %d: companyId %s on the target, want null", deals[1], crm.DeletedCompany, lost["companyId"])
	}
	rep := v.lastVerify(bitrix.Deals)
	if rep.DroppedLinksCount != 1 || len(rep.DroppedLinks) != 1 || rep.DroppedLinks[0].SourceID != strconv.Itoa(deals[1]) ||
		!strings.Contains(rep.DroppedLinks[0].Reason, strconv.Itoa(crm.DeletedCompany)) {
		t.Errorf("deals verify dropped links %d %+v, want deal %d's link to company %d", rep.DroppedLinksCount, rep.DroppedLinks, deals[1], crm.DeletedCompany)
	}
	if len(rep.NotMigrated) == 0 {
		t.Error("deals verify names nothing as not migrated")
	}
	// Money keeps every digit the portal sent.
	if got := v.onTarget(bitrix.Deals, strconv.Itoa(deals[2])); string(got["opportunity"]) != `"12345678901234.56"` {
		t.Errorf("deal %d opportunity %s, want \"12345678901234.56\"", deals[2], got["opportunity"])
	}
	// Enumeration values are the target's option ids; employee fields the target's user ids.
	fields := v.target.Fields(bitrix.Companies)
	options := map[string]bool{}
	for _, f := range fields {
		for _, o := range f.Options {
			options[o.ID] = true
		}
	}
	for _, r := range v.target.Records(bitrix.Companies) {
		var p map[string]json.RawMessage
		_ = json.Unmarshal(r.Payload, &p)
		var enum []string
		if err := json.Unmarshal(p["UF_CRM_1724077760"], &enum); err != nil {
			t.Fatalf("company %s UF_CRM_1724077760 %s: %v", r.Key, p["UF_CRM_1724077760"], err)
		}
		for _, o := range enum {
			if !options[o] {
				t.Errorf("company %s enumeration value %s is not a target option", r.Key, o)
			}
		}
	}
	// Smart process fields are named after the type's target id; a name too long for that is
	// shortened, and verify lists both renames.
	smartRep := v.lastVerify(bitrix.Smart)
	typeID := v.targetID(bitrix.CRMTypes, "1038")
	if len(smartRep.RenamedFields) != 3 {
		t.Errorf("smart renamed fields %q, want 3", smartRep.RenamedFields)
	}
	var long string
	for _, f := range v.target.Fields(bitrix.Smart) {
		if len(f.Name) > 50 {
			t.Errorf("smart field %s on the target is longer than 50", f.Name)
		}
		if strings.HasPrefix(f.Name, "UF_CRM_"+v.targetID(bitrix.CRMTypes, "1042")+"_CLAIM") {
			long = f.Name
		}
	}
	if long == "" {
		t.Errorf("no shortened smart field on the target: %+v", v.target.Fields(bitrix.Smart))
	}
	item := v.onTarget(bitrix.Smart, "1038:1")
	if jsonText(item["entityTypeId"]) != typeID || item["UF_CRM_"+typeID+"_COLOR"] == nil || item["UF_CRM_7_COLOR"] != nil {
		t.Errorf("smart item 1038:1 on the target: type %s, want %s; fields %v", item["entityTypeId"], typeID, keys(item))
	}
	if item := v.onTarget(bitrix.Smart, "1042:1"); item[long] == nil || jsonText(item["entityTypeId"]) != v.targetID(bitrix.CRMTypes, "1042") {
		t.Errorf("smart item 1042:1 (its row without entityTypeId): type %s, fields %v", item["entityTypeId"], keys(item))
	}

	// Timeline comments name their record and the users they mention by target ids.
	for _, r := range v.target.Records(bitrix.CRMComments) {
		var p map[string]string
		_ = json.Unmarshal(r.Payload, &p)
		owner := map[string]string{"company": bitrix.Companies, "contact": bitrix.Contacts, "deal": bitrix.Deals}[p["ENTITY_TYPE"]]
		src := v.record(bitrix.CRMComments, strings.TrimPrefix(r.Key, "source:crm_comments:"))
		var orig map[string]string
		_ = json.Unmarshal(src.Payload, &orig)
		if p["ENTITY_ID"] != v.targetID(owner, orig["ENTITY_ID"]) {
			t.Errorf("comment %s ENTITY_ID %s, want %s %s's target id", r.Key, p["ENTITY_ID"], owner, orig["ENTITY_ID"])
		}
		if rest, ok := strings.CutPrefix(orig["COMMENT"], "[USER="); ok {
			user, _, _ := strings.Cut(rest, "]")
			if want := "[USER=" + v.targetID(bitrix.Users, user) + "]"; !strings.HasPrefix(p["COMMENT"], want) {
				t.Errorf("comment %s = %q, want the mention as %s", r.Key, p["COMMENT"], want)
			}
		}
	}

	// Workflows: users in the tree translated where provable, the missing one kept and listed;
	// the smart process's document type and the running workflows' documents by target ids.
	wf := v.lastVerify(bitrix.Workflows)
	missing := fmt.Sprintf("user_%d", bitrixfake.MissingUser())
	found := false
	for _, u := range wf.Untranslated {
		found = found || strings.Contains(u.Reason, missing)
	}
	if !found {
		t.Errorf("workflows verify untranslated %+v, want %s listed", wf.Untranslated, missing)
	}
	for _, r := range v.target.Records(bitrix.Workflows) {
		if strings.Contains(string(r.Payload), "DYNAMIC_1038") {
			t.Errorf("template %s still names DYNAMIC_1038: %s", r.Key, r.Payload)
		}
	}
	for _, r := range v.target.Records(bitrix.WorkflowInstances) {
		var p map[string]json.RawMessage
		_ = json.Unmarshal(r.Payload, &p)
		doc := jsonText(p["DOCUMENT_ID"])
		tmpl := v.targetID(bitrix.Workflows, v.record(bitrix.WorkflowInstances, strings.TrimPrefix(r.Key, "source:workflow_instances:")).ParentSourceID)
		if jsonText(p["TEMPLATE_ID"]) != tmpl {
			t.Errorf("running workflow %s TEMPLATE_ID %s, want %s", r.Key, p["TEMPLATE_ID"], tmpl)
		}
		if after, ok := strings.CutPrefix(doc, "DEAL_"); ok {
			if _, err := strconv.Atoi(after); err != nil || after[0] != '1' || len(after) < 6 {
				t.Errorf("running workflow %s document %s is not a target deal id", r.Key, doc)
			}
		}
	}
	if len(wf.Children) != 2 || len(wf.NotMigrated) < 3 {
		t.Errorf("workflows verify children %+v, not migrated %q", wf.Children, wf.NotMigrated)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// lastVerify returns the stored report of an entity's last verify.
func (v *env) lastVerify(entity string) engine.VerifyReport {
	v.t.Helper()
	rep, err := v.engine().Report(v.ctx)
	if err != nil {
		v.t.Fatal(err)
	}
	for _, es := range rep.Entities {
		if es.Entity == entity && es.Inventory != nil && es.Inventory.LastVerify != nil {
			return *es.Inventory.LastVerify
		}
	}
	v.t.Fatalf("no verify report for %s", entity)
	return engine.VerifyReport{}
}

// The plan's calls for CRM records are the calls get then makes.
func TestCRMPlanForetellsWhatGetDoes(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 40, Seed: 4, Companies: 30, Contacts: 40, Deals: 2_600, SmartItems: 60})
	e := v.engine()
	v.phases(e, bitrix.CRMTypes, "get")
	p, err := e.Plan(v.ctx, rest.DefaultRate())
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]engine.EntityPlan{}
	for _, ep := range p.Entities {
		plans[ep.Entity] = ep
	}
	crm := v.portal.CRM()
	if plans[bitrix.Deals].Records != int64(crm.Deals) || plans[bitrix.Smart].Records != int64(crm.SmartItems) ||
		plans[bitrix.CRMCategories].Records != int64(crm.Categories) {
		t.Errorf("plan records: %+v", p.Entities)
	}
	for _, ent := range []string{bitrix.Deals, bitrix.Smart, bitrix.DealProducts} {
		if ent == bitrix.DealProducts { // planned from the deals read
			if p, err = e.Plan(v.ctx, rest.DefaultRate()); err != nil {
				t.Fatal(err)
			}
			for _, ep := range p.Entities {
				plans[ep.Entity] = ep
			}
		}
		before := v.portal.Stats().Requests
		if _, err := e.Get(v.ctx, ent); err != nil {
			t.Fatal(err)
		}
		got, want := v.portal.Stats().Requests-before, plans[ent].Calls
		// A deal with more than 50 product rows costs one command more, in a batch of its own.
		if got < want || got > want+1 {
			t.Errorf("%s get made %d calls, the plan said %d", ent, got, want)
		}
	}
}
