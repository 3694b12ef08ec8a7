package bitrixfake

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// TestEmptyPageAfter answers the one listing it names empty, in the method's own shape, once;
// other listings, and the same one asked again, answer their rows.
func TestEmptyPageAfter(t *testing.T) {
	p, srv := start(t, Options{Users: 120, Deals: 120, Seed: 5})
	users := p.UserIDs()
	after := strconv.Itoa(users[49])
	p.EmptyPageAfter("user.get", users[49])
	page := `{"FILTER":{">ID":` + after + `},"sort":"ID","order":"ASC","start":-1}`

	// The other page of the walk is answered as ever.
	if _, out := call(t, srv, p, "user.get", `{"FILTER":{">ID":0},"start":-1}`); len(ids(t, out["result"])) != 50 {
		t.Fatalf("first page: %v", out["result"])
	}
	status, out := call(t, srv, p, "user.get", page)
	if rows, ok := out["result"].([]any); status != http.StatusOK || !ok || len(rows) != 0 || out["next"] != nil || out["total"] != 0.0 {
		t.Fatalf("the empty page: %d %v, want result [] with no next and total 0 (start=-1 counts nothing)", status, out)
	}
	if _, out := call(t, srv, p, "user.get", page); len(ids(t, out["result"])) != 50 {
		t.Fatalf("the same page asked again: %d rows, want 50", len(ids(t, out["result"])))
	}
	if got := p.Stats().Faults; got != 1 {
		t.Errorf("Faults = %d, want 1", got)
	}

	// In a batch, for crm.item.list: items [], under the lower-case id filter.
	deals := p.PortalIDs(DeleteDeals)
	p.EmptyPageAfter("crm.item.list", deals[49])
	cmd := "crm.item.list?" + url.Values{"entityTypeId": {"2"}, "filter[>id]": {strconv.Itoa(deals[49])}, "start": {"-1"}}.Encode()
	status, out = call(t, srv, p, "batch", `{"halt":0,"cmd":{"a":`+strconv.Quote(cmd)+`}}`)
	res, _ := out["result"].(map[string]any)
	inner, _ := res["result"].(map[string]any)
	a, _ := inner["a"].(map[string]any)
	if items, ok := a["items"].([]any); status != http.StatusOK || !ok || len(items) != 0 {
		t.Fatalf("the empty page in a batch: %d %v, want items []", status, out)
	}
}
