package targetfake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

type client struct {
	t     *testing.T
	url   string
	token string
	http  *http.Client
}

func start(t *testing.T, opts Options) (*Server, *client) {
	t.Helper()
	s := New(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, &client{t: t, url: srv.URL + "/api/v1/", token: s.Token(), http: http.DefaultClient}
}

// post sends a request and decodes the answer into out; it returns the
// status, or -1 when no answer came.
func (c *client) post(method, body string, out any) int {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url+method, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s: decode %q: %v", method, raw, err)
		}
	}
	return resp.StatusCode
}

type batchAnswer struct {
	Results []struct {
		Key      string `json:"key"`
		TargetID string `json:"target_id"`
		Status   string `json:"status"`
		Error    *struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	} `json:"results"`
}

func (c *client) batch(entity, items string) batchAnswer {
	c.t.Helper()
	var out batchAnswer
	if status := c.post("import."+entity+".batch", `{"items":[`+items+`]}`, &out); status != 200 {
		c.t.Fatalf("batch: status %d", status)
	}
	return out
}

func TestBatchIsIdempotentByKey(t *testing.T) {
	s, c := start(t, Options{})
	first := c.batch("users", `{"key":"source:users:1","checksum":"a","payload":{"NAME":"Анна"}},
		{"key":"source:users:2","checksum":"b","payload":{"NAME":"Иван"}}`)
	again := c.batch("users", `{"key":"source:users:1","checksum":"a","payload":{"NAME":"Анна"}},
		{"key":"source:users:2","checksum":"c","payload":{"NAME":"Иван Петров"}}`)

	tests := []struct {
		got, want string
	}{
		{first.Results[0].Status, "created"},
		{first.Results[1].Status, "created"},
		{again.Results[0].Status, "unchanged"},
		{again.Results[1].Status, "updated"},
		{again.Results[0].TargetID, first.Results[0].TargetID},
		{again.Results[1].TargetID, first.Results[1].TargetID},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("check %d: got %q, want %q", i, tt.got, tt.want)
		}
	}
	if first.Results[0].TargetID == first.Results[1].TargetID || first.Results[0].TargetID == "1" {
		t.Errorf("target IDs %q and %q: want distinct IDs unlike the source's", first.Results[0].TargetID, first.Results[1].TargetID)
	}
	rec, _ := s.Lookup("users", "source:users:2")
	if string(rec.Payload) != `{"NAME":"Иван Петров"}` || rec.Checksum != "c" {
		t.Errorf("record after update: %+v", rec)
	}
	if st := s.Stats(); st.Created != 2 || st.Updated != 1 || st.Unchanged != 1 || st.Duplicates != 0 || s.Count("users") != 2 {
		t.Errorf("stats %+v, count %d", st, s.Count("users"))
	}
}

// With StableIDs a key gets the same target id on two servers whichever order the records
// arrive in, and distinct keys distinct ids.
func TestStableIDsFollowTheKey(t *testing.T) {
	_, one := start(t, Options{StableIDs: true})
	_, two := start(t, Options{StableIDs: true})
	a := `{"key":"source:users:1","checksum":"a","payload":{}}`
	b := `{"key":"source:users:2","checksum":"b","payload":{}}`
	first, second := one.batch("users", a+","+b), two.batch("users", b+","+a)
	if first.Results[0].TargetID != second.Results[1].TargetID || first.Results[1].TargetID != second.Results[0].TargetID {
		t.Errorf("ids by order: %+v and %+v", first.Results, second.Results)
	}
	if first.Results[0].TargetID == first.Results[1].TargetID || len(first.Results[0].TargetID) != 13 {
		t.Errorf("ids %q and %q: want distinct 13-digit ids", first.Results[0].TargetID, first.Results[1].TargetID)
	}
}

func TestDuplicatesAreCounted(t *testing.T) {
	s, c := start(t, Options{})
	c.batch("users", `{"key":"source:users:42","checksum":"a","payload":{}}`)
	c.batch("users", `{"key":"source:users:042","checksum":"a","payload":{}}`)
	c.batch("users", `{"key":"Source:Users: 42","checksum":"a","payload":{}}`)
	c.batch("users", `{"key":"source:users:420","checksum":"a","payload":{}}`)
	if got := s.Stats().Duplicates; got != 2 {
		t.Errorf("Duplicates = %d, want 2", got)
	}
}

func TestItemErrors(t *testing.T) {
	s, c := start(t, Options{})
	s.FailItems("groups", 1)
	s.RejectKey("groups", "source:groups:9", "owner is an extranet user")
	out := c.batch("groups", `{"key":"source:groups:1","checksum":"a","payload":{}},
		{"key":"source:groups:2","checksum":"a","payload":{}},
		{"key":"source:groups:9","checksum":"a","payload":{}},
		{"key":"","checksum":"a","payload":{}},
		{"key":"source:groups:3","checksum":"a","payload":[1]},
		{"key":"source:groups:4","payload":{}}`)
	type want struct {
		status, code string
		retryable    bool
	}
	wants := []want{
		{"", "temporarily_unavailable", true},
		{"created", "", false},
		{"", "rejected", false},
		{"", "validation_failed", false},
		{"", "validation_failed", false},
		{"", "validation_failed", false},
	}
	for i, w := range wants {
		r := out.Results[i]
		got := want{status: r.Status}
		if r.Error != nil {
			got.code, got.retryable = r.Error.Code, r.Error.Retryable
		}
		if got != w {
			t.Errorf("item %d: %+v, want %+v", i, got, w)
		}
	}
	if s.Count("groups") != 1 || s.Stats().Failed != 5 {
		t.Errorf("count %d, stats %+v", s.Count("groups"), s.Stats())
	}
	// The retryable failure was not stored; sent again it goes through.
	if again := c.batch("groups", `{"key":"source:groups:1","checksum":"a","payload":{}}`); again.Results[0].Status != "created" {
		t.Errorf("retry: %+v", again.Results[0])
	}
}

func TestRequestErrors(t *testing.T) {
	s, c := start(t, Options{MaxItems: 2})
	tests := []struct {
		name, method, body, token string
		wantStatus                int
		wantCode                  string
	}{
		{"no token", "import.users.count", `{}`, "-", 401, "unauthorized"},
		{"wrong token", "import.users.count", `{}`, "nope", 401, "unauthorized"},
		{"unknown method", "import.users.remove", `{}`, "", 404, "unknown_method"},
		{"bad entity", "import.Users.count", `{}`, "", 404, "unknown_method"},
		{"not JSON", "import.users.batch", `{`, "", 400, "bad_request"},
		{"no items", "import.users.batch", `{}`, "", 400, "bad_request"},
		{"too many items", "import.users.batch", `{"items":[{},{},{}]}`, "", 400, "bad_request"},
		{"both lookups", "import.users.get", `{"keys":["a"],"target_ids":["1"]}`, "", 400, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := *c
			switch tt.token {
			case "-":
				cc.token = ""
			case "":
			default:
				cc.token = tt.token
			}
			var out struct {
				Error struct{ Code, Message string }
			}
			if status := cc.post(tt.method, tt.body, &out); status != tt.wantStatus || out.Error.Code != tt.wantCode {
				t.Errorf("got %d %+v, want %d %s", status, out, tt.wantStatus, tt.wantCode)
			}
		})
	}
	if s.Count("users") != 0 {
		t.Error("a failed request stored something")
	}
}

func TestCountAndGet(t *testing.T) {
	_, c := start(t, Options{})
	created := c.batch("users", `{"key":"source:users:1","checksum":"a","payload":{"NAME":"Анна"}},
		{"key":"source:users:2","checksum":"b","payload":{"NAME":"Иван"}}`)

	var count struct{ Count int }
	if c.post("import.users.count", `{}`, &count); count.Count != 2 {
		t.Errorf("count = %d", count.Count)
	}
	type got struct {
		Items []struct {
			Key, TargetID string
			Checksum      string
			Payload       map[string]any
		}
		Missing []string
	}
	var byKey got
	c.post("import.users.get", `{"keys":["source:users:2","source:users:7"]}`, &byKey)
	if len(byKey.Items) != 1 || byKey.Items[0].Payload["NAME"] != "Иван" || byKey.Items[0].Checksum != "b" ||
		!reflect.DeepEqual(byKey.Missing, []string{"source:users:7"}) {
		t.Errorf("by key: %+v", byKey)
	}
	var byID struct {
		Items []struct {
			Key      string `json:"key"`
			TargetID string `json:"target_id"`
		}
		Missing []string
	}
	c.post("import.users.get", `{"target_ids":["`+created.Results[0].TargetID+`","999"]}`, &byID)
	if len(byID.Items) != 1 || byID.Items[0].Key != "source:users:1" || !reflect.DeepEqual(byID.Missing, []string{"999"}) {
		t.Errorf("by target ID: %+v", byID)
	}
}

func TestFields(t *testing.T) {
	s, c := start(t, Options{})
	body := `{"fields":[{"name":"UF_USR_MONEY","type":"money","multiple":false,"label":"Salary"},{"name":"UF_X"}]}`
	var out struct {
		Results []struct {
			Name, Status string
			Error        *struct{ Code string }
		}
	}
	c.post("import.users.fields.add", body, &out)
	if out.Results[0].Status != "created" || out.Results[1].Error == nil {
		t.Errorf("first add: %+v", out.Results)
	}
	c.post("import.users.fields.add", `{"fields":[{"name":"uf_usr_money","type":"money"}]}`, &out)
	if out.Results[0].Status != "exists" {
		t.Errorf("second add: %+v", out.Results)
	}
	var list struct{ Fields []Field }
	c.post("import.users.fields", `{}`, &list)
	if len(list.Fields) != 1 || list.Fields[0].Label != "Salary" || len(s.Fields("users")) != 1 {
		t.Errorf("fields: %+v", list.Fields)
	}
}

func TestFaults(t *testing.T) {
	// The slow fault holds its answer 5 s, a hundred times the impatient client's timeout below,
	// which runs out first however busy the machine. (It cannot wait for the client to leave: a
	// handler that has not read its body is not told the connection closed.)
	s, c := start(t, Options{SlowDelay: 5 * time.Second})
	item := `{"key":"source:users:1","checksum":"a","payload":{}}`

	s.FailNext("import.users.batch", FaultServerError, 1)
	if status := c.post("import.users.batch", `{"items":[`+item+`]}`, nil); status != 503 || s.Count("users") != 0 {
		t.Errorf("server error: status %d, count %d", status, s.Count("users"))
	}
	s.FailNext("", FaultDrop, 1)
	if status := c.post("import.users.batch", `{"items":[`+item+`]}`, nil); status != -1 || s.Count("users") != 0 {
		t.Errorf("drop: status %d, count %d", status, s.Count("users"))
	}
	s.FailNext("import.users.batch", FaultLostAnswer, 1)
	if status := c.post("import.users.batch", `{"items":[`+item+`]}`, nil); status != -1 || s.Count("users") != 1 {
		t.Errorf("lost answer: status %d, count %d; want no answer but the record stored", status, s.Count("users"))
	}
	s.FailNext("import.users.batch", FaultSlow, 1)
	impatient := *c
	impatient.http = &http.Client{Timeout: 50 * time.Millisecond}
	if status := impatient.post("import.users.batch", `{"items":[`+item+`]}`, nil); status != -1 {
		t.Errorf("slow: status %d, want a timeout", status)
	}
	// Resending after any of these is safe: still one record, same ID.
	rec, _ := s.Lookup("users", "source:users:1")
	if out := c.batch("users", item); out.Results[0].TargetID != rec.TargetID || s.Count("users") != 1 {
		t.Errorf("resend: %+v, count %d", out.Results[0], s.Count("users"))
	}
}

func TestCorruptAndDelete(t *testing.T) {
	s, c := start(t, Options{})
	c.batch("users", `{"key":"source:users:1","checksum":"a","payload":{"NAME":"Анна","EMAIL":"a@example.ru"}},
		{"key":"source:users:2","checksum":"b","payload":{"NAME":"Иван"}}`)
	if err := s.Corrupt("users", "source:users:1", "NAME", "Анка"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Items []struct {
			Checksum string
			Payload  map[string]any
		}
	}
	c.post("import.users.get", `{"keys":["source:users:1"]}`, &got)
	if got.Items[0].Payload["NAME"] != "Анка" || got.Items[0].Checksum != "a" {
		t.Errorf("after Corrupt: %+v", got.Items[0])
	}
	if err := s.Corrupt("users", "source:users:9", "NAME", "x"); err == nil {
		t.Error("Corrupt of a missing record succeeded")
	}
	if !s.Delete("users", "source:users:2") || s.Delete("users", "source:users:2") {
		t.Error("Delete should report true once, then false")
	}
	var count struct{ Count int }
	if c.post("import.users.count", `{}`, &count); count.Count != 1 {
		t.Errorf("count after Delete = %d", count.Count)
	}
	if recs := s.Records("users"); len(recs) != 1 || recs[0].Key != "source:users:1" {
		t.Errorf("Records = %+v", recs)
	}
}

func TestReferencesMustNameHeldRecords(t *testing.T) {
	s, c := start(t, Options{})
	user := s.Put("users", "source:users:1", json.RawMessage(`{"NAME":"A"}`))
	var a batchAnswer
	body := `{"items":[{"key":"source:tasks:2","checksum":"c","payload":{"createdBy":"` + user + `","responsibleId":"` + user +
		`","parentId":"424242","accomplices":[]}}]}`
	if code := c.post("import.tasks.batch", body, &a); code != 200 || a.Results[0].Error == nil ||
		a.Results[0].Error.Code != "reference_not_found" || a.Results[0].Error.Retryable {
		t.Fatalf("a task naming a parent the target does not hold: %d %+v", code, a.Results)
	}
	body = `{"items":[{"key":"source:tasks:1","checksum":"c","payload":{"createdBy":"` + user + `","responsibleId":"` + user +
		`","parentId":null,"accomplices":["` + user + `"],"groupId":null}}]}`
	a = batchAnswer{}
	if code := c.post("import.tasks.batch", body, &a); code != 200 || a.Results[0].Error != nil {
		t.Fatalf("a task naming held records: %d %+v", code, a.Results)
	}
	body = `{"items":[{"key":"source:task_checklists:1","checksum":"c","payload":{"task_id":"` + a.Results[0].TargetID +
		`","items":[{"id":"5","created_by":"` + user + `","members":[{"user_id":"77"}]}]}}]}`
	a = batchAnswer{}
	if code := c.post("import.task_checklists.batch", body, &a); code != 200 || a.Results[0].Error == nil ||
		!strings.Contains(a.Results[0].Error.Message, "items.members.user_id") {
		t.Fatalf("a checklist naming a member the target does not hold: %d %+v", code, a.Results)
	}
}
