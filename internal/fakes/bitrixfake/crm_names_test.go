package bitrixfake

import (
	"net/http"
	"testing"
)

// crm.item.list takes the fields crm.item.fields lists, in camelCase (DOCS crm/universal/index.md
// "we convert them to camelCase", object-fields.md "Fields in select, filter, and order"): the id
// is "id" in filter and order, and the UPPER_CASE "ID" of the classic lists is refused as any
// field the method does not know, with the documented INVALID_ARG_VALUE.
func TestCRMItemListTakesCamelCaseNames(t *testing.T) {
	p, srv := start(t, Options{Users: 20, Seed: 2, Deals: 60})
	tests := []struct {
		name, body string
		status     int
		code       string
		rows       int
	}{
		{"id in the filter", `{"entityTypeId": 2, "filter": {">id": 0, "<=id": 10}, "start": 0}`, http.StatusOK, "", 10},
		{"id in the order", `{"entityTypeId": 2, "order": {"id": "DESC"}, "start": -1}`, http.StatusOK, "", 50},
		{"ID in the filter", `{"entityTypeId": 2, "filter": {">ID": 0}}`, http.StatusBadRequest, "INVALID_ARG_VALUE", 0},
		{"ID in the order", `{"entityTypeId": 2, "order": {"ID": "ASC"}}`, http.StatusBadRequest, "INVALID_ARG_VALUE", 0},
		{"a date in the filter", `{"entityTypeId": 2, "filter": {">updatedTime": "2000-01-01T00:00:00+00:00"}, "start": 0}`, http.StatusOK, "", 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out := call(t, srv, p, "crm.item.list", tt.body)
			if status != tt.status || (tt.code != "" && out["error"] != tt.code) {
				t.Fatalf("status %d, error %v (%v); want %d %s", status, out["error"], out["error_description"], tt.status, tt.code)
			}
			if tt.code != "" {
				return
			}
			if items := out["result"].(map[string]any)["items"].([]any); len(items) != tt.rows {
				t.Errorf("%d items, want %d", len(items), tt.rows)
			}
		})
	}
}
