package bitrixfake

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// TestObserve sees every method the portal runs, a batch's commands one by one (not the batch), with their
// parameters as sent, and before the method answers.
func TestObserve(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	var p *Portal
	p, srv := start(t, Options{Users: 10, Deals: 10, Seed: 5, Observe: func(method string, params map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		filter, _ := params["filter"].(map[string]any)
		seen = append(seen, fmt.Sprintf("%s %v %d", method, filter["@id"], p.stats.Calls[method]))
	}})
	deals := p.PortalIDs(DeleteDeals)
	one, two := strconv.Itoa(deals[0]), strconv.Itoa(deals[1])
	cmd := func(ids ...string) string {
		v := url.Values{"entityTypeId": {"2"}, "start": {"-1"}}
		for i, id := range ids {
			v.Set(fmt.Sprintf("filter[@id][%d]", i), id)
		}
		return strconv.Quote("crm.item.list?" + v.Encode())
	}
	call(t, srv, p, "batch", `{"halt":0,"cmd":{"a":`+cmd(one)+`,"b":`+cmd(one, two)+`}}`)
	call(t, srv, p, "user.get", `{"FILTER":{"ID":1}}`)

	// The batch itself is no method run: its commands are. A filter read from a query string is
	// as PHP reads it: a list is a map by index.
	want := []string{fmt.Sprintf("crm.item.list map[0:%s] 0", one), fmt.Sprintf("crm.item.list map[0:%s 1:%s] 1", one, two),
		"user.get <nil> 0"}
	if !slices.Equal(seen, want) {
		t.Errorf("observed %q, want %q", seen, want)
	}
}
