package rest

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBuildQuery(t *testing.T) {
	tests := []struct {
		name   string
		params any
		want   string
	}{
		{"nil", nil, ""},
		{"nested filter", map[string]any{"FILTER": map[string]any{">ID": 0}, "start": -1},
			"FILTER%5B%3EID%5D=0&start=-1"},
		{"list", map[string]any{"select": []string{"ID", "NAME"}}, "select%5B0%5D=ID&select%5B1%5D=NAME"},
		{"booleans and null", map[string]any{"a": true, "b": false, "c": nil}, "a=1&b=0"},
		{"empty containers vanish", map[string]any{"a": []string{}, "b": map[string]any{}, "c": "x"}, "c=x"},
		{"reference", map[string]any{"FILTER": map[string]any{">ID": "$result[p0][49][ID]"}},
			"FILTER%5B%3EID%5D=%24result%5Bp0%5D%5B49%5D%5BID%5D"},
		{"spaces and unicode", map[string]any{"NAME": "Анна Б"}, "NAME=%D0%90%D0%BD%D0%BD%D0%B0+%D0%91"},
		{"key order of raw JSON is kept", json.RawMessage(`{"order":{"NAME":"ASC","ID":"DESC"}}`),
			"order%5BNAME%5D=ASC&order%5BID%5D=DESC"},
		{"positional parameters", []any{42, map[string]any{"ID": "asc"}}, "0=42&1%5BID%5D=asc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BuildQuery(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("BuildQuery = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := BuildQuery("scalar"); err == nil {
		t.Error("BuildQuery(scalar) succeeded, want an error")
	}
}

// TestBuildQueryRoundTrip decodes the query the way PHP's parse_str does
// (url.ParseQuery is close enough for flat keys) to check the reference
// text survives intact.
func TestBuildQueryRoundTrip(t *testing.T) {
	q, err := BuildQuery(map[string]any{"FILTER": map[string]any{">ID": Ref("p3", "tasks", "49", "id")}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Get("FILTER[>ID]"); got != "$result[p3][tasks][49][id]" {
		t.Errorf("decoded value %q", got)
	}
}

func TestIDAcceptsStringsAndNumbers(t *testing.T) {
	tests := []struct {
		in      string
		want    ID
		wantErr bool
	}{
		{`"42"`, "42", false},
		{`42`, "42", false},
		{`null`, "", false},
		{`"chat1317"`, "chat1317", false},
		{`"66e412fdc9bd44.36306599"`, "66e412fdc9bd44.36306599", false},
		{`{}`, "", true},
		{`true`, "", true},
	}
	for _, tt := range tests {
		var id ID
		err := json.Unmarshal([]byte(tt.in), &id)
		if (err != nil) != tt.wantErr || id != tt.want {
			t.Errorf("Unmarshal(%s) = %q, %v; want %q, error %v", tt.in, id, err, tt.want, tt.wantErr)
		}
	}
	var row struct {
		ID     ID   `json:"ID"`
		ChatID ID   `json:"chat_id"`
		Users  []ID `json:"users"`
	}
	if err := json.Unmarshal([]byte(`{"ID":"7","chat_id":1231,"users":[1,"2"]}`), &row); err != nil {
		t.Fatal(err)
	}
	if n, err := row.ChatID.Int64(); err != nil || n != 1231 || row.ID != "7" || !reflect.DeepEqual(row.Users, []ID{"1", "2"}) {
		t.Errorf("row = %+v", row)
	}
	if _, err := ID("chat1").Int64(); err == nil {
		t.Error(`ID("chat1").Int64() succeeded`)
	}
}

func TestRows(t *testing.T) {
	tests := []struct {
		name   string
		result string
		path   []string
		want   []string
	}{
		{"list", `[{"ID":"1"},{"ID":"2"}]`, nil, []string{`{"ID":"1"}`, `{"ID":"2"}`}},
		{"empty list", `[]`, nil, nil},
		{"empty object", `{}`, nil, nil},
		{"PHP array with gaps", `{"3":{"ID":"3"},"1":{"ID":"1"}}`, nil, []string{`{"ID":"3"}`, `{"ID":"1"}`}},
		{"nested", `{"tasks":[{"id":"8017"}]}`, []string{"tasks"}, []string{`{"id":"8017"}`}},
		{"nested empty", `{"tasks":[]}`, []string{"tasks"}, nil},
		{"nested in an empty result", `[]`, []string{"items"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Response{Result: json.RawMessage(tt.result)}
			rows, err := r.Rows(tt.path...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, row := range rows {
				got = append(got, string(row))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Rows = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSectionAcceptsEmptyListsAndLists(t *testing.T) {
	raw := `{"result":[],"result_error":{"a":{"error":"x","error_description":""}},"result_total":[5,7],"result_next":[],"result_time":{}}`
	cmds := []Command{{Key: "0", Method: "m0"}, {Key: "1", Method: "m1"}, {Key: "a", Method: "ma"}}
	res, err := decodeBatch(&envelope{Result: json.RawMessage(raw)}, cmds, map[string]string{"0": "m0", "1": "m1", "a": "ma"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 0 || len(res.Errors) != 1 || res.Errors["a"].Method != "ma" || res.Totals["1"] != 7 ||
		len(res.Nexts) != 0 || len(res.Times) != 0 {
		t.Errorf("decoded %+v", res)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://portal.bitrix24.ru/rest/1/s3cr3t/", "https://portal.bitrix24.ru/rest/1/***/"},
		{"https://portal.bitrix24.ru/sub/rest/12/s3cr3t/", "https://portal.bitrix24.ru/sub/rest/12/***/"},
		{"https://portal.bitrix24.ru/other/s3cr3t/", "https://portal.bitrix24.ru/***/"},
		{"https://portal.bitrix24.ru/", "https://portal.bitrix24.ru"},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.in)
		if got := redact(u); got != tt.want {
			t.Errorf("redact(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestNewRejectsBadURLsWithoutEchoingThem(t *testing.T) {
	for _, raw := range []string{
		"ftp://portal/rest/1/s3cr3t/",
		"/rest/1/s3cr3t/",
		"https://portal/rest/1/s3cr3t/?x=1",
		"https://user:s3cr3t@portal/rest/1/x/",
		"https://portal/rest/1/s3cr3t%zz/",
	} {
		_, err := New(raw, Options{})
		if err == nil {
			t.Errorf("New(%q) succeeded", raw)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("New(%q) error leaks the token: %v", raw, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    Rate
		wantErr bool
	}{
		{"2/50", Rate{2, 50}, false},
		{" 5/250 ", Rate{5, 250}, false},
		{"0.5/10", Rate{0.5, 10}, false},
		{"3", Rate{3, 50}, false},
		{"0/50", Rate{}, true},
		{"x/50", Rate{}, true},
		{"2/0", Rate{}, true},
		{"2/many", Rate{}, true},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if s := (Rate{5, 250}).String(); s != "5/250" {
		t.Errorf("String = %q", s)
	}
	if l := (Rate{2, 50}).NewLimiter(); l.Burst() != 49 || l.Limit() != 2 {
		t.Errorf("limiter %v/%d, want 2/49 (one request of headroom)", l.Limit(), l.Burst())
	}
}

func TestMethodClassification(t *testing.T) {
	for method, read := range map[string]bool{
		"user.get": true, "sonet_group.user.get": true, "user.userfield.list": true, "user.fields": true,
		"task.commentitem.getlist": true, "user.current": true, "batch": false,
		"user.userfield.add": false, "log.blogcomment.add": false, "crm.deal.update": false,
	} {
		if got := IsReadMethod(method); got != read {
			t.Errorf("IsReadMethod(%s) = %v", method, got)
		}
	}
	for method, scope := range map[string]string{
		"user.get": "user", "user.userfield.list": "user.userfield", "sonet_group.user.get": "sonet",
		"tasks.task.list": "task", "im.dialog.messages.get": "im", "crm.item.list": "crm", "foo.bar": "",
	} {
		if got := ScopeOf(method); got != scope {
			t.Errorf("ScopeOf(%s) = %q, want %q", method, got, scope)
		}
	}
}

func TestAPIError(t *testing.T) {
	err := error(&APIError{Method: "sonet_group.get", HTTPStatus: 403, Code: "insufficient_scope", Description: "needs more"})
	if want := `bitrix sonet_group.get: HTTP 403 insufficient_scope: needs more (the webhook lacks the "sonet" scope this method needs)`; err.Error() != want {
		t.Errorf("Error() = %s\nwant      %s", err, want)
	}
	wrapped := errors.Join(errors.New("context"), err)
	if !errors.Is(wrapped, &APIError{Code: "INSUFFICIENT_SCOPE"}) || !HasCode(wrapped, CodeInsufficientScope) {
		t.Error("code comparison should see through wrapping and ignore case")
	}
	if errors.Is(wrapped, &APIError{Code: CodeMethodNotFound}) {
		t.Error("matched a different code")
	}
	tests := []struct {
		err       error
		permanent bool
	}{
		{&APIError{HTTPStatus: 503, Code: CodeQueryLimitExceeded}, false},
		{&APIError{HTTPStatus: 429, Code: CodeQueryLimitExceeded}, false}, // the first docs revision said 429
		{&APIError{HTTPStatus: 429, Code: CodeOperationTimeLimit}, false},
		{&APIError{HTTPStatus: 503, Code: CodeOverloadLimit}, true},
		{&APIError{HTTPStatus: 500, Code: "ERROR_CORE"}, false},
		{&APIError{HTTPStatus: 502, notJSON: true}, false},
		{&APIError{HTTPStatus: 200, notJSON: true}, false},
		{&APIError{HTTPStatus: 404, notJSON: true}, true},
		{&APIError{HTTPStatus: 401, Code: CodeNoAuthFound}, true},
		{&APIError{HTTPStatus: 400, Code: ""}, true},
		{&TransportError{Method: "user.get", Err: errors.New("EOF")}, false},
		{errors.New("anything else"), true},
	}
	for _, tt := range tests {
		if got := IsPermanent(tt.err); got != tt.permanent {
			t.Errorf("IsPermanent(%v) = %v", tt.err, got)
		}
	}
}

func TestOperatingTracker(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reset := now.Add(7 * time.Minute)
	o := newOperating(480*time.Second, 60*time.Second)

	if until := o.observe("user.get", Time{Operating: 419, OperatingResetAt: float64(reset.Unix())}, now); !until.IsZero() {
		t.Errorf("paused at 419 s of 480: until %v", until)
	}
	if until := o.observe("USER.GET", Time{Operating: 420}, now); !until.Equal(reset) {
		t.Errorf("at 420 s: paused until %v, want the last reset time %v", until, reset)
	}
	if got := o.pausedUntil("user.get"); !got.Equal(reset) {
		t.Errorf("pausedUntil = %v", got)
	}
	if got := o.pausedUntil("sonet_group.get"); !got.IsZero() {
		t.Errorf("another method is paused until %v", got)
	}
	later := reset.Add(time.Second)
	if until := o.blocked("user.get", later); !until.Equal(later.Add(time.Minute)) {
		t.Errorf("blocked after the reset time passed: until %v, want a minute later", until)
	}
}
