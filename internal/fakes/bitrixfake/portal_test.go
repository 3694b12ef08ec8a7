package bitrixfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	embedded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// call posts a JSON body to a method of the portal and decodes the answer.
func call(t *testing.T, srv *httptest.Server, p *Portal, method, body string) (int, map[string]any) {
	t.Helper()
	return callAt(t, srv, p.WebhookPath(), method, body)
}

// callAt calls a method through the webhook at path.
func callAt(t *testing.T, srv *httptest.Server, path, method, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(srv.URL+path+method+".json", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", method, err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s answered non-JSON %q: %v", method, raw, err)
	}
	return resp.StatusCode, out
}

func start(t *testing.T, opts Options) (*Portal, *httptest.Server) {
	t.Helper()
	p := New(opts)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

func ids(t *testing.T, result any) []string {
	t.Helper()
	rows, ok := result.([]any)
	if !ok {
		t.Fatalf("result is %T, want a list", result)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.(map[string]any)["ID"].(string)
	}
	return out
}

func readFixture(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := fs.ReadFile(embedded.Bitrix(), name)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decode fixture %s: %v", name, err)
	}
	return out
}

func TestUserGetPagesLikeThePortal(t *testing.T) {
	p, srv := start(t, Options{Users: 120, Seed: 1})
	all := p.UserIDs()
	tests := []struct {
		name      string
		body      string
		wantFirst string
		wantLen   int
		wantTotal any // nil: absent; 0 with start=-1 (DOCS performance/huge-data.md: no count)
		wantNext  any
	}{
		{"first page", `{}`, "1", 50, 120.0, 50.0},
		{"second page", `{"start":50}`, strconv.Itoa(all[50]), 50, 120.0, 100.0},
		{"last page has no next", `{"start":100}`, strconv.Itoa(all[100]), 20, 120.0, nil},
		{"start=-1 does not count", `{"start":-1}`, "1", 50, 0.0, nil},
		{"ID filter", `{"FILTER":{">ID":100},"start":-1}`, strconv.Itoa(all[90]), 30, 0.0, nil},
		{"ID filter, counted", `{"FILTER":{">ID":100}}`, strconv.Itoa(all[90]), 30, 30.0, nil},
		{"legacy top-level filter", `{"ID":"12"}`, "12", 1, 1.0, nil},
		{"descending", `{"sort":"ID","order":"DESC","start":-1}`, strconv.Itoa(all[119]), 50, 0.0, nil},
		{"filter by value", `{"FILTER":{"ACTIVE":false},"start":-1}`, "", -1, 0.0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out := call(t, srv, p, "user.get", tt.body)
			if status != http.StatusOK {
				t.Fatalf("status %d: %v", status, out)
			}
			got := ids(t, out["result"])
			if tt.wantLen >= 0 && len(got) != tt.wantLen {
				t.Errorf("%d rows, want %d", len(got), tt.wantLen)
			}
			if tt.wantFirst != "" && (len(got) == 0 || got[0] != tt.wantFirst) {
				t.Errorf("first ID %v, want %s", got, tt.wantFirst)
			}
			if out["total"] != tt.wantTotal {
				t.Errorf("total = %v, want %v", out["total"], tt.wantTotal)
			}
			if out["next"] != tt.wantNext {
				t.Errorf("next = %v, want %v", out["next"], tt.wantNext)
			}
		})
	}
}

func TestInactiveFilterReturnsOnlyDismissedUsers(t *testing.T) {
	p, srv := start(t, Options{Users: 200, Seed: 3})
	_, out := call(t, srv, p, "user.get", `{"FILTER":{"ACTIVE":false},"start":-1}`)
	rows := out["result"].([]any)
	if len(rows) == 0 {
		t.Fatal("no dismissed users among 200; the generator should make a few")
	}
	for _, r := range rows {
		if r.(map[string]any)["ACTIVE"] != false {
			t.Errorf("row %v is active", r)
		}
	}
}

// TestRowsHaveTheShapeOfTheSamples checks every field of the documented
// samples is present with the same JSON type.
func TestRowsHaveTheShapeOfTheSamples(t *testing.T) {
	p, srv := start(t, Options{Users: 10, Groups: 3, Seed: 1})
	tests := []struct {
		fixture, method, body string
		// dates in the portal's own formats where the sample shows {}
		differ map[string]bool
	}{
		{"user.get.json", "user.get", `{}`, map[string]bool{"TIMESTAMP_X": true, "LAST_ACTIVITY_DATE": true}},
		{"sonet_group.get.json", "sonet_group.get", `{"IS_ADMIN":"Y"}`, nil},
		{"sonet_group.user.get.json", "sonet_group.user.get", `{"ID":1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			sample := readFixture(t, tt.fixture)["result"].([]any)[0].(map[string]any)
			_, out := call(t, srv, p, tt.method, tt.body)
			got := out["result"].([]any)[0].(map[string]any)
			for key, want := range sample {
				v, ok := got[key]
				if !ok {
					t.Errorf("field %s missing", key)
					continue
				}
				if tt.differ[key] {
					continue
				}
				if want != nil && v != nil && reflect.TypeOf(want) != reflect.TypeOf(v) {
					t.Errorf("field %s is %T (%v), the sample has %T (%v)", key, v, v, want, want)
				}
			}
			for _, key := range []string{"DATE_REGISTER", "DATE_CREATE"} {
				if s, ok := got[key].(string); ok {
					if _, err := time.Parse(time.RFC3339, s); err != nil || !strings.HasSuffix(s, "+03:00") {
						t.Errorf("%s = %q, want ISO 8601 with +03:00", key, s)
					}
				}
			}
		})
	}
}

func TestSameSeedSameData(t *testing.T) {
	body := func(seed uint64) string {
		p, srv := start(t, Options{Users: 60, Groups: 5, Seed: seed})
		_, out := call(t, srv, p, "user.get", `{"start":-1}`)
		b, _ := json.Marshal(out["result"])
		_, groups := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN":"Y"}`)
		g, _ := json.Marshal(groups["result"])
		return string(b) + string(g)
	}
	// Two separately built portals, not one call compared with itself.
	if first, second := body(7), body(7); first != second {
		t.Error("two portals with seed 7 differ")
	}
	if body(7) == body(8) {
		t.Error("portals with seeds 7 and 8 are identical")
	}
}

func TestErrorsHaveTheRealBodies(t *testing.T) {
	p, srv := start(t, Options{Users: 5, Groups: 2, Seed: 1, Scopes: []string{"user"}})
	tests := []struct {
		name, url, body string
		wantStatus      int
		want            map[string]any
	}{
		{"wrong token", "/rest/1/wrong/user.get.json", `{}`, 401,
			map[string]any{"error": "NO_AUTH_FOUND", "error_description": "Wrong authorization data"}},
		{"wrong user", "/rest/2/" + p.Token() + "/user.get.json", `{}`, 401,
			map[string]any{"error": "NO_AUTH_FOUND", "error_description": "Wrong authorization data"}},
		{"unknown method", p.WebhookPath() + "im.chat.message.list.json", `{}`, 404,
			map[string]any{"error": "ERROR_METHOD_NOT_FOUND", "error_description": "Method not found!"}},
		{"missing scope", p.WebhookPath() + "sonet_group.get.json", `{}`, 403,
			map[string]any{"error": "insufficient_scope", "error_description": "The request requires higher privileges than provided by the webhook token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+tt.url, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %d %v, want %d %v", resp.StatusCode, got, tt.wantStatus, tt.want)
			}
		})
	}

	t.Run("group not found", func(t *testing.T) {
		p, srv := start(t, Options{Users: 5, Groups: 2, Seed: 1})
		status, got := call(t, srv, p, "sonet_group.user.get", `{"ID":999}`)
		if want := readFixture(t, "sonet_group.user.get.error.json"); status != 400 || !reflect.DeepEqual(got, want) {
			t.Errorf("got %d %v, want 400 %v", status, got, want)
		}
	})
}

func TestBatchEnvelope(t *testing.T) {
	t.Run("errors only, as in the halt=0 sample", func(t *testing.T) {
		p, srv := start(t, Options{Users: 5, Seed: 1, Scopes: []string{}})
		status, got := call(t, srv, p, "batch",
			`{"halt":0,"cmd":{"get_user":"user.current?","get_department":"user.get?ID=1"}}`)
		want := readFixture(t, "batch.error.halt0.json")
		if status != 200 || !reflect.DeepEqual(got["result"], want["result"]) {
			t.Errorf("got %d %v\nwant %v", status, got["result"], want["result"])
		}
	})
	t.Run("halt stops at the first error, as in the halt=1 sample", func(t *testing.T) {
		p, srv := start(t, Options{Users: 5, Seed: 1, Scopes: []string{}})
		_, got := call(t, srv, p, "batch",
			`{"halt":1,"cmd":{"get_user":"user.current?","get_department":"user.get?ID=1"}}`)
		want := readFixture(t, "batch.error.halt1.json")
		if !reflect.DeepEqual(got["result"], want["result"]) {
			t.Errorf("got %v\nwant %v", got["result"], want["result"])
		}
	})

	p, srv := start(t, Options{Users: 120, Seed: 1})
	t.Run("successes leave result_error as []", func(t *testing.T) {
		_, got := call(t, srv, p, "batch", `{"cmd":{"a":"user.get?start=0","b":"user.get?ID=1"}}`)
		res := got["result"].(map[string]any)
		if !reflect.DeepEqual(res["result_error"], []any{}) {
			t.Errorf("result_error = %v, want []", res["result_error"])
		}
		if next := res["result_next"].(map[string]any); next["a"] != 50.0 || len(next) != 1 {
			t.Errorf("result_next = %v, want {a: 50}", next)
		}
		if total := res["result_total"].(map[string]any); total["a"] != 120.0 || total["b"] != 1.0 {
			t.Errorf("result_total = %v, want {a: 120, b: 1}", total)
		}
		if times := res["result_time"].(map[string]any); len(times) != 2 {
			t.Errorf("result_time = %v, want an entry per command", times)
		}
	})
	t.Run("commands past 50 fail", func(t *testing.T) {
		var cmds []string
		for i := range 52 {
			cmds = append(cmds, `"c`+strconv.Itoa(i)+`":"user.get?ID=1"`)
		}
		_, got := call(t, srv, p, "batch", `{"cmd":{`+strings.Join(cmds, ",")+`}}`)
		res := got["result"].(map[string]any)
		errs := res["result_error"].(map[string]any)
		if len(res["result"].(map[string]any)) != 50 || len(errs) != 2 ||
			errs["c51"].(map[string]any)["error"] != "ERROR_BATCH_LENGTH_EXCEEDED" {
			t.Errorf("got %d results and errors %v", len(res["result"].(map[string]any)), errs)
		}
	})
	t.Run("no batch in a batch", func(t *testing.T) {
		_, got := call(t, srv, p, "batch", `{"cmd":{"a":"batch?cmd%5Bx%5D=user.get"}}`)
		errs := got["result"].(map[string]any)["result_error"].(map[string]any)
		if errs["a"].(map[string]any)["error"] != "ERROR_BATCH_METHOD_NOT_ALLOWED" {
			t.Errorf("result_error = %v", errs)
		}
	})
	t.Run("numeric keys make lists", func(t *testing.T) {
		_, got := call(t, srv, p, "batch", `{"cmd":["user.get?ID=1","user.get?ID=2"]}`)
		list, ok := got["result"].(map[string]any)["result"].([]any)
		if !ok || len(list) != 2 {
			t.Errorf("result = %v, want a list of 2", got["result"])
		}
	})
	t.Run("form-encoded batch keeps command order", func(t *testing.T) {
		form := "halt=1&cmd[b]=" + urlq("user.get?ID=2") + "&cmd[a]=" + urlq("user.get?ID=$result[b][0][ID]")
		resp, err := http.Post(srv.URL+p.WebhookPath()+"batch", "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&got)
		res := got["result"].(map[string]any)["result"].(map[string]any)
		if first := ids(t, res["a"]); len(first) != 1 || first[0] != "2" {
			t.Errorf("a = %v, want user 2 through the reference to b", res["a"])
		}
	})
}

func urlq(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "=", "%3D", "?", "%3F", "[", "%5B", "]", "%5D", "$", "%24").Replace(s)
}

func TestBatchReferences(t *testing.T) {
	p, srv := start(t, Options{Users: 60, Seed: 1})
	chain := `{"halt":1,"cmd":{` +
		`"a":"user.get?FILTER%5B%3EID%5D=0&start=-1",` +
		`"b":"user.get?FILTER%5B%3EID%5D=$result[a][49][ID]&start=-1",` +
		`"c":"user.get?FILTER%5B%3EID%5D=$result[b][49][ID]&start=-1"}}`
	_, got := call(t, srv, p, "batch", chain)
	res := got["result"].(map[string]any)["result"].(map[string]any)
	a, b, c := ids(t, res["a"]), ids(t, res["b"]), ids(t, res["c"])
	if len(a) != 50 || len(b) != 10 || b[0] != strconv.Itoa(p.UserIDs()[50]) {
		t.Fatalf("a has %d rows, b %d rows starting at %v", len(a), len(b), b)
	}
	// b has no row 49: the portal substitutes the whole of b's rows, PHP's
	// intval of a non-empty array is 1, and c lists users after ID 1.
	if c[0] != "2" {
		t.Errorf("c starts at %s, want 2: the garbage a broken reference yields", c[0])
	}
}

func TestResolveString(t *testing.T) {
	refs := map[string]map[string]any{
		"result": {"a": []any{map[string]any{"ID": "7"}}, "o": map[string]any{"x": 5.0}},
		"next":   {"a": 50.0}, "total": {}, "time": {}, "error": {},
	}
	tests := []struct {
		in   string
		want any
	}{
		{"$result[a][0][ID]", "7"},
		{"$next[a]", 50.0},
		{"id-$result[a][0][ID]", "id-7"},
		{"$result[o][x]", 5.0},
		{"n=$result[o][x]", "n=5"},
		{"$result[a][3][ID]", []any{map[string]any{"ID": "7"}}}, // stops at a
		{"x $result[a][3][ID]", "x $result[a][3][ID]"},          // not a scalar: text stays
		{"$RESULT[a][0][ID]", nil},                              // keys are case-sensitive
		{"no reference", "no reference"},
	}
	for _, tt := range tests {
		if got := resolveString(tt.in, refs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("resolveString(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestParseStr(t *testing.T) {
	got := parseStr("a[b][]=1&a[b][]=2&FILTER%5B%3EID%5D=5&c=%24result%5Bx%5D&d=x+y&e[0]=A&e[1]=B")
	want := map[string]any{
		"a":      map[string]any{"b": map[string]any{"0": "1", "1": "2"}},
		"FILTER": map[string]any{">ID": "5"},
		"c":      "$result[x]",
		"d":      "x y",
		"e":      map[string]any{"0": "A", "1": "B"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseStr = %v, want %v", got, want)
	}
}

func TestLeakyBucket(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p, srv := start(t, Options{Users: 5, Seed: 1, Rate: 2, Burst: 5, Now: clock.Now})
	for i := range 5 {
		if status, out := call(t, srv, p, "user.get", `{}`); status != 200 {
			t.Fatalf("request %d: %d %v", i+1, status, out)
		}
	}
	status, out := call(t, srv, p, "user.get", `{}`)
	want := map[string]any{"error": "QUERY_LIMIT_EXCEEDED", "error_description": "Too many requests"}
	if status != 503 || !reflect.DeepEqual(out, want) {
		t.Errorf("6th request: %d %v, want 503 %v", status, out, want)
	}
	clock.Advance(500 * time.Millisecond) // drains one request
	if status, _ := call(t, srv, p, "user.get", `{}`); status != 200 {
		t.Errorf("after draining one: %d, want 200", status)
	}
	if status, _ := call(t, srv, p, "user.get", `{}`); status != 503 {
		t.Errorf("then: %d, want 503", status)
	}
	if s := p.Stats(); s.QueryLimit != 2 || s.Requests != 8 {
		t.Errorf("stats = %+v, want 2 refusals of 8 requests", s)
	}
}

func TestOperatingTimeLimit(t *testing.T) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	p, srv := start(t, Options{Users: 5, Groups: 2, Seed: 1, Now: clock.Now,
		OperatingLimit: 300 * time.Second, CallCost: 120 * time.Second})
	for i, wantOperating := range []float64{120, 240, 360} {
		status, out := call(t, srv, p, "user.get", `{}`)
		if status != 200 {
			t.Fatalf("call %d: %d %v", i+1, status, out)
		}
		tm := out["time"].(map[string]any)
		if tm["operating"] != wantOperating {
			t.Errorf("call %d: operating %v, want %v", i+1, tm["operating"], wantOperating)
		}
		if want := float64(time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC).Unix()); tm["operating_reset_at"] != want {
			t.Errorf("call %d: operating_reset_at %v, want %v", i+1, tm["operating_reset_at"], want)
		}
	}
	status, out := call(t, srv, p, "user.get", `{}`)
	want := map[string]any{"error": "OPERATION_TIME_LIMIT", "error_description": "Method is blocked due to operation time limit."}
	if status != 429 || !reflect.DeepEqual(out, want) {
		t.Errorf("4th call: %d %v, want 429 %v", status, out, want)
	}
	if status, _ := call(t, srv, p, "sonet_group.get", `{}`); status != 200 {
		t.Errorf("another method: %d, want 200: the limit is per method", status)
	}
	_, out = call(t, srv, p, "batch", `{"cmd":{"u":"user.get?ID=1"}}`)
	if e := out["result"].(map[string]any)["result_error"].(map[string]any)["u"]; e.(map[string]any)["error"] != "OPERATION_TIME_LIMIT" {
		t.Errorf("inside a batch: %v, want OPERATION_TIME_LIMIT", e)
	}
	clock.Advance(10 * time.Minute)
	if status, _ := call(t, srv, p, "user.get", `{}`); status != 200 {
		t.Errorf("after the window: %d, want 200", status)
	}
}

func TestFaults(t *testing.T) {
	// The slow fault holds its answer until its client leaves: the impatient client's timeout
	// below is certain to run out first, however busy the machine.
	p, srv := start(t, Options{Users: 5, Seed: 1, SlowDelay: time.Hour})
	post := func(c *http.Client) (*http.Response, error) {
		return c.Post(srv.URL+p.WebhookPath()+"user.get.json", "application/json", strings.NewReader(`{}`))
	}

	p.FailNext("user.get", FaultServerError, 1)
	resp, err := post(http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !bytes.Contains(body, []byte("<h1>502 Bad Gateway</h1>")) {
		t.Errorf("server error fault: %d %q", resp.StatusCode, body)
	}

	p.FailNext("", FaultDrop, 1)
	if resp, err := post(http.DefaultClient); err == nil {
		resp.Body.Close()
		t.Errorf("dropped connection: got status %d, want an error", resp.StatusCode)
	}

	p.FailNext("user.get", FaultSlow, 1)
	// The impatient client's timeout counts from its request written, not from its start: a
	// whole-request timeout could run out on a busy machine before the request left, and the
	// fault, still armed, would hold the normal request below for SlowDelay (it did, 8 minutes).
	impatient := &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}
	t.Cleanup(impatient.CloseIdleConnections)
	_, err = post(&http.Client{Transport: impatient})
	var netErr interface{ Timeout() bool }
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("slow fault: err = %v, want a timeout", err)
	}
	// The portal takes the fault when it reads the request, which may come after the client
	// gave up; the request was written whole, so it does come.
	for p.Stats().Faults < 3 {
		time.Sleep(time.Millisecond)
	}

	resp, err = post(http.DefaultClient)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("after the faults: %v, want a normal answer", err)
	} else {
		resp.Body.Close()
	}
	if got := p.Stats().Faults; got != 3 {
		t.Errorf("Faults = %d, want 3", got)
	}

	// A refusal for the rate limit is the portal's own answer, and it fills nothing.
	ran := p.Stats().Calls["user.get"]
	p.FailNext("user.get", FaultQueryLimit, 1)
	status, refused := call(t, srv, p, "user.get", `{}`)
	if status != 503 || refused["error"] != "QUERY_LIMIT_EXCEEDED" {
		t.Errorf("query limit fault: %d %v, want 503 QUERY_LIMIT_EXCEEDED", status, refused)
	}
	if s := p.Stats(); s.QueryLimit != 1 || s.Calls["user.get"] != ran {
		t.Errorf("stats %+v, want 1 refusal and the refused user.get not run", s)
	}
}

func TestGroups(t *testing.T) {
	p, srv := start(t, Options{Users: 300, Groups: 80, Seed: 5})
	all := p.GroupIDs()

	_, admin := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN":"Y","start":-1}`)
	desc := ids(t, admin["result"])
	if desc[0] != strconv.Itoa(all[len(all)-1]) {
		t.Errorf("default order starts at %s, want the highest ID %d", desc[0], all[len(all)-1])
	}
	_, asc := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN":"Y","ORDER":{"ID":"ASC"}}`)
	if got := asc["total"]; got != float64(len(all)) {
		t.Errorf("admin total = %v, want %d", got, len(all))
	}
	_, user := call(t, srv, p, "sonet_group.get", `{"ORDER":{"ID":"ASC"}}`)
	hidden := float64(len(all)) - user["total"].(float64)
	if hidden <= 0 {
		t.Errorf("without IS_ADMIN %v of %d groups are hidden, want some", hidden, len(all))
	}

	dismissedMembers := 0
	for _, g := range all {
		_, out := call(t, srv, p, "sonet_group.user.get", `{"ID":`+strconv.Itoa(g)+`}`)
		members := out["result"].([]any)
		if len(members) != len(p.ActiveMembers(g)) {
			t.Fatalf("group %d: %d members over HTTP, %d from ActiveMembers", g, len(members), len(p.ActiveMembers(g)))
		}
		for _, m := range members {
			_, u := call(t, srv, p, "user.get", `{"ID":`+m.(map[string]any)["USER_ID"].(string)+`}`)
			if u["result"].([]any)[0].(map[string]any)["ACTIVE"] != true {
				t.Errorf("group %d lists dismissed user %v", g, m)
			}
		}
		_, row := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN":"Y","FILTER":{"ID":`+strconv.Itoa(g)+`}}`)
		n := row["result"].([]any)[0].(map[string]any)["NUMBER_OF_MEMBERS"].(string)
		dismissedMembers += atoi(n) - len(members)
	}
	if dismissedMembers <= 0 {
		t.Error("NUMBER_OF_MEMBERS never counts a dismissed member; the generator should produce some")
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func TestMutations(t *testing.T) {
	p, srv := start(t, Options{Users: 100, Groups: 5, Seed: 2})

	p.SetUserField(5, "LAST_NAME", "Переименованная")
	_, out := call(t, srv, p, "user.get", `{"ID":5}`)
	if got := out["result"].([]any)[0].(map[string]any)["LAST_NAME"]; got != "Переименованная" {
		t.Errorf("LAST_NAME = %v after SetUserField", got)
	}

	g := p.GroupIDs()[0]
	members := p.ActiveMembers(g)
	groupRow := func() map[string]any {
		_, out := call(t, srv, p, "sonet_group.get", `{"IS_ADMIN":"Y","FILTER":{"ID":`+strconv.Itoa(g)+`}}`)
		return out["result"].([]any)[0].(map[string]any)
	}
	before := atoi(groupRow()["NUMBER_OF_MEMBERS"].(string))
	p.RemoveMember(g, members[0].UserID)
	if got := len(p.ActiveMembers(g)); got != len(members)-1 {
		t.Errorf("%d members after RemoveMember, want %d", got, len(members)-1)
	}
	if after := atoi(groupRow()["NUMBER_OF_MEMBERS"].(string)); after != before-1 {
		t.Errorf("NUMBER_OF_MEMBERS %d -> %d, want one less", before, after)
	}

	p.SetGroupField(g, "OWNER_ID", "999999")
	if got := groupRow()["OWNER_ID"]; got != "999999" {
		t.Errorf("OWNER_ID = %v after SetGroupField", got)
	}

	p.DeleteUser(5)
	_, out = call(t, srv, p, "user.get", `{}`)
	if out["total"] != 99.0 {
		t.Errorf("total = %v after DeleteUser, want 99", out["total"])
	}
}

func TestGetWithQueryString(t *testing.T) {
	p, srv := start(t, Options{Users: 120, Seed: 1})
	resp, err := http.Get(srv.URL + p.WebhookPath() + "user.get.json?FILTER%5B%3EID%5D=100&start=-1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if got := ids(t, out["result"]); got[0] != "101" {
		t.Errorf("first ID %s, want 101", got[0])
	}
	if last := p.LastRequest(); last.Verb != http.MethodGet || last.Method != "user.get" {
		t.Errorf("LastRequest = %+v", last)
	}
}

func TestMovedTo(t *testing.T) {
	old := httptest.NewServer(MovedTo("https://new.example.com"))
	defer old.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Post(old.URL+"/rest/1/tok/user.get.json", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || loc != "https://new.example.com/rest/1/tok/user.get.json" {
		t.Errorf("got %d %q", resp.StatusCode, loc)
	}
}
