package graphfake_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
)

type client struct {
	t   *testing.T
	srv *httptest.Server
}

func start(t *testing.T, o graphfake.Options) (*graphfake.Server, *client) {
	t.Helper()
	f := graphfake.New(o)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, &client{t: t, srv: srv}
}

// get returns the status and the decoded body.
func (c *client) get(path string, q url.Values) (int, map[string]any, http.Header) {
	c.t.Helper()
	resp, err := http.Get(c.srv.URL + "/v23.0/" + path + "?" + q.Encode())
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, body, resp.Header
}

func errCode(body map[string]any) float64 {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

func TestMediaPagingAndFields(t *testing.T) {
	f, c := start(t, graphfake.Options{Seed: 1, Accounts: []graphfake.AccountSpec{{Username: "brand", Connected: true, Posts: 250, Comments: 400, Stories: 2}}})
	tok, id := f.Token("brand"), f.UserID("brand")
	var seen []string
	after := ""
	pages := 0
	for {
		q := url.Values{"access_token": {tok}, "limit": {"100"}, "fields": {"id,media_type,media_url,timestamp,children{id,media_url}"}}
		if after != "" {
			q.Set("after", after)
		}
		status, body, h := c.get(id+"/media", q)
		if status != 200 {
			t.Fatalf("page %d: %d %v", pages, status, body)
		}
		// A connected account's calls count against its token's Business Use Case budget, not
		// the app's Platform Rate Limits.
		if h.Get("X-App-Usage") != "" || h.Get("X-Business-Use-Case-Usage") == "" {
			t.Errorf("usage headers of a connected call: X-App-Usage %q, X-Business-Use-Case-Usage %q", h.Get("X-App-Usage"), h.Get("X-Business-Use-Case-Usage"))
		}
		pages++
		for _, it := range body["data"].([]any) {
			m := it.(map[string]any)
			seen = append(seen, m["id"].(string))
			if ts := m["timestamp"].(string); !strings.HasSuffix(ts, "+0000") {
				t.Errorf("timestamp %q", ts)
			}
		}
		p, _ := body["paging"].(map[string]any)
		if p["next"] == nil {
			break
		}
		after = p["cursors"].(map[string]any)["after"].(string)
	}
	if len(seen) != 250 || pages != 3 {
		t.Errorf("%d media in %d pages, want 250 in 3", len(seen), pages)
	}
	// An unknown field is refused like the platform does.
	if status, body, _ := c.get(id+"/media", url.Values{"access_token": {tok}, "fields": {"id,bogus"}}); status != 400 || errCode(body) != 100 {
		t.Errorf("unknown field: %d %v", status, body)
	}
	// Another account's token cannot read this one.
	if status, body, _ := c.get(id+"/media", url.Values{"access_token": {"EAAGikroskunFixtureToken"}}); status != 400 || errCode(body) != 100 {
		t.Errorf("foreign token: %d %v", status, body)
	}
}

func TestDiscoveryPagesByAfterWithoutNext(t *testing.T) {
	f, c := start(t, graphfake.Options{Seed: 2})
	viewer := f.UserID("north_coffee")
	tok := f.Token("north_coffee")
	n, after := 0, ""
	for range 30 {
		media := "media.limit(25)"
		if after != "" {
			media += ".after(" + after + ")"
		}
		status, body, h := c.get(viewer, url.Values{"access_token": {tok}, "fields": {"business_discovery.username(harbour_bikes){id,username," + media + "{id,like_count,timestamp}}"}})
		if h.Get("X-App-Usage") == "" || h.Get("X-Business-Use-Case-Usage") != "" {
			t.Errorf("usage headers of business discovery: X-App-Usage %q, X-Business-Use-Case-Usage %q", h.Get("X-App-Usage"), h.Get("X-Business-Use-Case-Usage"))
		}
		if status == 400 && errCode(body) == 100 && after != "" {
			n, after = 0, "" // harbour_bikes refuses its first cursor once: list again from the newest
			continue
		}
		if status != 200 {
			t.Fatalf("%d %v", status, body)
		}
		m := body["business_discovery"].(map[string]any)["media"].(map[string]any)
		n += len(m["data"].([]any))
		p := m["paging"].(map[string]any)
		if p["next"] != nil {
			t.Fatal("business discovery linked a next page")
		}
		a, _ := p["cursors"].(map[string]any)["after"].(string)
		if a == "" {
			break
		}
		after = a
	}
	if n != 260 {
		t.Errorf("read %d media", n)
	}
	status, body, _ := c.get(viewer, url.Values{"access_token": {tok}, "fields": {"business_discovery.username(agegated_spirits){id}"}})
	if e := body["error"].(map[string]any); status != 400 || e["code"].(float64) != 110 || e["error_subcode"].(float64) != 2207013 {
		t.Errorf("age-gated: %d %v", status, body)
	}
	status, body, _ = c.get(viewer, url.Values{"access_token": {tok}, "fields": {"business_discovery.username(maple.bakery){id,media{id,shortcode}}"}})
	if status != 400 || errCode(body) != 100 {
		t.Errorf("a field business discovery does not give: %d %v", status, body)
	}
	status, body, _ = c.get(f.UserID("expired_brand"), url.Values{"access_token": {f.Token("expired_brand")}})
	if status != 400 || errCode(body) != 190 {
		t.Errorf("expired token: %d %v", status, body)
	}
}

func TestCursorFaults(t *testing.T) {
	f, c := start(t, graphfake.Options{Seed: 3, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "del", Connected: true, Posts: 30, DeleteBetweenPages: true},
		{Username: "empty", Connected: true, Posts: 30, EmptyPageWithNext: true},
	}})
	page := func(user, after string) (int, map[string]any) {
		q := url.Values{"access_token": {f.Token(user)}, "limit": {"10"}}
		if after != "" {
			q.Set("after", after)
		}
		s, b, _ := c.get(f.UserID(user)+"/media", q)
		return s, b
	}
	cursor := func(b map[string]any) string {
		return b["paging"].(map[string]any)["cursors"].(map[string]any)["after"].(string)
	}
	_, b := page("del", "")
	if s, b2 := page("del", cursor(b)); s != 400 || errCode(b2) != 100 {
		t.Errorf("cursor of a deleted post: %d %v", s, b2)
	}
	_, b = page("empty", "")
	_, b2 := page("empty", cursor(b))
	if len(b2["data"].([]any)) != 0 || b2["paging"].(map[string]any)["next"] == nil {
		t.Errorf("want an empty page with next: %v", b2)
	}
	_, b3 := page("empty", cursor(b2))
	if len(b3["data"].([]any)) != 10 {
		t.Errorf("after the empty page: %v", b3)
	}
	f.InvalidateCursors()
	if s, b4 := page("empty", cursor(b3)); s != 400 || errCode(b4) != 100 {
		t.Errorf("invalidated cursor: %d %v", s, b4)
	}
}

func TestThrottling(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	f, c := start(t, graphfake.Options{Seed: 4, ThrottleEvery: 3, RegainMinutes: 2, Now: func() time.Time { return now }})
	tok, id := f.Token("north_coffee"), f.UserID("north_coffee")
	codes := map[float64]bool{}
	for range 3 {
		status, body, h := c.get(id, url.Values{"access_token": {tok}, "fields": {"id"}})
		if status == 400 {
			codes[errCode(body)] = true
			if !strings.Contains(h.Get("X-Business-Use-Case-Usage"), `"estimated_time_to_regain_access":2`) {
				t.Errorf("throttled without regain time: %s", h.Get("X-Business-Use-Case-Usage"))
			}
		}
	}
	if !codes[80002] {
		t.Errorf("throttling codes seen: %v, want 80002 first", codes)
	}
	// The token stays throttled; business discovery, on the app's budget, is not.
	if status, _, _ := c.get(id, url.Values{"access_token": {tok}}); status != 400 || f.Stats().WhileThrottled != 1 {
		t.Errorf("while throttled: %d, %+v", status, f.Stats())
	}
	discovery := url.Values{"access_token": {tok}, "fields": {"business_discovery.username(maple.bakery){id}"}}
	if status, body, _ := c.get(id, discovery); status != 200 {
		t.Errorf("business discovery while a token's Business Use Case budget is throttled: %d %v", status, body)
	}
	// The sixth request, a discovery call, throttles the app's Platform Rate Limits with a
	// Platform code; connected calls of another token go on.
	status, body, _ := c.get(id, discovery)
	if code := errCode(body); status != 400 || (code != 4 && code != 17 && code != 32 && code != 613) {
		t.Errorf("discovery throttled: %d %v, want a Platform Rate Limits code", status, body)
	}
	other := f.Token("studio.lumen")
	if status, body, _ := c.get(f.UserID("studio.lumen"), url.Values{"access_token": {other}, "fields": {"id"}}); status != 200 {
		t.Errorf("a connected call while the app's Platform budget is throttled: %d %v", status, body)
	}
	if status, _, _ := c.get(id, discovery); status != 400 {
		t.Errorf("discovery while the app is throttled: %d", status)
	}
}

func TestEmptyPageRuns(t *testing.T) {
	f, c := start(t, graphfake.Options{Seed: 6, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "gaps", Connected: true, Posts: 30, Comments: 60, EmptyPages: 2, EmptyCommentPages: 1}}})
	tok, id := f.Token("gaps"), f.UserID("gaps")
	after, n, empties := "", 0, 0
	for range 40 {
		q := url.Values{"access_token": {tok}, "limit": {"10"}}
		if after != "" {
			q.Set("after", after)
		}
		status, body, _ := c.get(id+"/media", q)
		if status != 200 {
			t.Fatalf("%d %v", status, body)
		}
		data := body["data"].([]any)
		p, _ := body["paging"].(map[string]any)
		next, _ := p["next"].(string)
		if len(data) == 0 {
			empties++
			a := p["cursors"].(map[string]any)["after"].(string)
			if next == "" || (after != "" && a != after) {
				t.Fatalf("an empty page must hand back its cursor with a next link: %v", body)
			}
		}
		n += len(data)
		if next == "" {
			break
		}
		u, _ := url.Parse(next)
		after = u.Query().Get("after")
	}
	if n != 30 || empties != 6 {
		t.Errorf("read %d media through %d empty pages, want 30 through 6 (2 before each of 3 pages)", n, empties)
	}
}

func TestFixtureAccounts(t *testing.T) {
	f, c := start(t, graphfake.Options{Seed: 5, Accounts: []graphfake.AccountSpec{}})
	tok := f.Token("ikroskun")
	status, body, _ := c.get("17841406338772941/media", url.Values{"access_token": {tok}, "fields": {"id,media_type,children{id,media_type}"}})
	if status != 200 || len(body["data"].([]any)) != 4 {
		t.Fatalf("%d %v", status, body)
	}
	status, body, _ = c.get("17896622936197745/comments", url.Values{"access_token": {tok}, "fields": {"id,text,timestamp,replies{id,text}"}})
	if status != 200 || len(body["data"].([]any)) != 4 || body["paging"] != nil {
		t.Errorf("fixture comments: %d %v", status, body)
	}
	status, body, _ = c.get("17841406338772941", url.Values{"access_token": {tok}, "fields": {"business_discovery.username(facebookfordevelopers){followers_count,media{id,caption}}"}})
	if status != 200 || !strings.Contains(mustJSON(body), "17885103395504675") {
		t.Errorf("fixture discovery: %d %v", status, body)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
