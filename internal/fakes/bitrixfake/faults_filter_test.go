package bitrixfake

import (
	"strconv"
	"testing"
)

// TestIgnoreFilterKey lists as if the ignored key were not in the filter, and keeps the rest.
func TestIgnoreFilterKey(t *testing.T) {
	p, srv := start(t, Options{Users: 120, Seed: 5})
	users := p.UserIDs()
	asked := `{"FILTER":{"@ID":[` + strconv.Itoa(users[3]) + `,` + strconv.Itoa(users[7]) + `],">ID":0},"start":-1}`
	if _, out := call(t, srv, p, "user.get", asked); len(ids(t, out["result"])) != 2 {
		t.Fatalf("before: %v, want the 2 users asked for", out["result"])
	}
	p.IgnoreFilterKey("user.get", "@id")
	if _, out := call(t, srv, p, "user.get", asked); len(ids(t, out["result"])) != 50 {
		t.Fatalf("ignoring @ID: %d rows, want a full page as if it were not there", len(ids(t, out["result"])))
	}
	after := `{"FILTER":{"@ID":[1],">ID":` + strconv.Itoa(users[99]) + `},"start":-1}`
	if _, out := call(t, srv, p, "user.get", after); len(ids(t, out["result"])) != 20 {
		t.Fatalf("the rest of the filter: %d rows, want the 20 after the 100th user", len(ids(t, out["result"])))
	}
	if got := p.Stats().Faults; got != 2 {
		t.Errorf("Faults = %d, want 2", got)
	}
}
