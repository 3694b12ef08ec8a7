package bitrixfake

import (
	"reflect"
	"sort"
	"strconv"
	"testing"
)

// The CRM answers in the documented shapes: rows under items with camelCase int ids, no count
// with start=-1 (total 0, huge-data.md), the fm container only with select ['*'], the original custom field names only
// with useOriginalUfNames=Y, and the documented refusals.
func TestCRMItemListAnswersAsDocumented(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Seed: 2, Companies: 80, Contacts: 10, Deals: 120, SmartItems: 5})
	status, out := call(t, srv, p, "crm.item.list", `{"entityTypeId": 2, "select": ["*"], "useOriginalUfNames": "Y",
		"order": {"id": "ASC"}, "filter": {">id": 0}, "start": -1}`)
	items := out["result"].(map[string]any)["items"].([]any)
	if status != 200 || len(items) != 50 || out["total"] != 0.0 || out["next"] != nil {
		t.Fatalf("start=-1: status %d, %d items, total %v, next %v", status, len(items), out["total"], out["next"])
	}
	first := items[0].(map[string]any)
	if first["id"] != float64(p.DealIDs()[0]) || first["UF_CRM_1724077760"] == nil {
		t.Errorf("first deal %v", first)
	}
	_, out = call(t, srv, p, "crm.item.list", `{"entityTypeId": 4, "start": 50}`)
	items = out["result"].(map[string]any)["items"].([]any)
	if out["total"] != float64(len(p.CompanyIDs())) || len(items) != len(p.CompanyIDs())-50 {
		t.Errorf("page 2 of companies: total %v, %d items", out["total"], len(items))
	}
	if c := items[0].(map[string]any); c["fm"] != nil || c["ufCrm1724077760"] == nil {
		t.Errorf("without select ['*'] and useOriginalUfNames: %v", c)
	}
	_, out = call(t, srv, p, "crm.item.list", `{"entityTypeId": 1038, "select": ["*"], "filter": {"@id": [2, 4]}}`)
	items = out["result"].(map[string]any)["items"].([]any)
	var got []float64
	for _, it := range items {
		got = append(got, it.(map[string]any)["id"].(float64))
	}
	sort.Float64s(got)
	if !reflect.DeepEqual(got, []float64{2, 4}) {
		t.Errorf("@id [2, 4] gave %v", got)
	}
	for _, c := range []struct {
		opts         Options
		method, body string
		status       int
		code         string
	}{
		{Options{}, "crm.item.list", `{"entityTypeId": 777}`, 400, "NOT_FOUND"},
		{Options{}, "crm.item.list", `{"entityTypeId": 2, "filter": {">ID2": 5}}`, 400, "INVALID_ARG_VALUE"},
		{Options{Extranet: true}, "crm.item.list", `{"entityTypeId": 2}`, 403, "allowed_only_intranet_user"},
		{Options{DenyCRM: true}, "crm.type.list", `{}`, 403, "ACCESS_DENIED"},
		{Options{}, "crm.item.productrow.list", `{"filter": {"=ownerType": "D"}}`, 400, "REQUIRED_ARG_MISSING"},
		{Options{}, "crm.category.list", `{"entityTypeId": 777}`, 400, "NOT_FOUND"},
		{Options{DenyBizproc: true}, "bizproc.workflow.instances", `{}`, 403, "ACCESS_DENIED"},
		{Options{DenyBizproc: true}, "bizproc.workflow.template.list", `{}`, 400, "ACCESS_DENIED"},
	} {
		p, srv := start(t, c.opts)
		status, out := call(t, srv, p, c.method, c.body)
		if status != c.status || out["error"] != c.code {
			t.Errorf("%s %s: %d %v, want %d %s", c.method, c.body, status, out, c.status, c.code)
		}
	}
}

// A deal's product rows come 50 to a page; the funnels and stages of every type are listed.
func TestCRMDictionariesAndProductRows(t *testing.T) {
	p, srv := start(t, Options{Users: 5, Seed: 2, Deals: 10, SmartItems: 3})
	deal := p.DealIDs()[3] // the deal with 53 rows
	_, out := call(t, srv, p, "crm.item.productrow.list", `{"filter": {"=ownerType": "D", "=ownerId": `+itoa(deal)+`}, "start": 50}`)
	rows := out["result"].(map[string]any)["productRows"].([]any)
	if out["total"] != float64(53) || len(rows) != 3 {
		t.Errorf("second page of deal %d's rows: total %v, %d rows", deal, out["total"], len(rows))
	}
	_, out = call(t, srv, p, "crm.category.list", `{"entityTypeId": 2}`)
	if cats := out["result"].(map[string]any)["categories"].([]any); len(cats) != 3 {
		t.Errorf("deal funnels: %v", cats)
	}
	_, out = call(t, srv, p, "crm.status.list", `{"filter": {"ENTITY_ID": "DYNAMIC_1038_STAGE_22"}}`)
	if stages := out["result"].([]any); len(stages) != 4 || stages[0].(map[string]any)["STATUS_ID"] != "DT1038_22:NEW" {
		t.Errorf("stages of smart process funnel 22: %v", stages)
	}
	_, out = call(t, srv, p, "userfieldconfig.list", `{"moduleId": "crm", "filter": {"entityId": "CRM_9"}}`)
	if fields := out["result"].(map[string]any)["fields"].([]any); len(fields) != 1 ||
		len(fields[0].(map[string]any)["fieldName"].(string)) != 50 {
		t.Errorf("fields of smart process 9: %v", fields)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
