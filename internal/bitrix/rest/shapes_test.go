package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/retry"
)

// serve answers every request with the body and status; testdata/README.md says where each
// body comes from.
func serve(t *testing.T, status int, contentType string, body []byte) *rest.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	c, err := rest.New(srv.URL+"/rest/1/tok/", rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1),
		Retry: retry.Policy{Delays: []time.Duration{0}}, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchAnswerShapes decodes every shape of a batch answer recorded or documented: each
// command gets its own result or error, or a MissingError that says it should be sent again;
// an error is never given to a command it cannot be proved to belong to.
func TestBatchAnswerShapes(t *testing.T) {
	named := []rest.Command{{Key: "get_user", Method: "user.get"}, {Key: "get_department", Method: "department.get"}}
	indexed := []rest.Command{{Key: "0", Method: "user.get"}, {Key: "1", Method: "department.get"}}
	three := []rest.Command{{Key: "a", Method: "user.get"}, {Key: "b", Method: "im.dialog.get"}, {Key: "c", Method: "im.dialog.get"}}
	type want struct {
		result   bool
		code     string // the command's own error, if any
		missing  bool   // a MissingError: send it again
		total    int    // -1: none
		hasTotal bool
	}
	tests := []struct {
		name string
		body []byte
		cmds []rest.Command
		want map[string]want
		// unmatched is how many errors could not be tied to a command.
		unmatched int
	}{
		{"documented, keyed by command", testdata(t, "batch.json"), named, map[string]want{
			"get_user": {result: true}, "get_department": {result: true, total: 1, hasTotal: true}}, 0},
		{"keyed by position, commands named", testdata(t, "batch.positional.json"), named, map[string]want{
			"get_user": {result: true}, "get_department": {result: true, total: 1, hasTotal: true}}, 0},
		{"keyed by position, commands keyed 0 and 1", testdata(t, "batch.positional.json"), indexed, map[string]want{
			"0": {result: true}, "1": {result: true, total: 1, hasTotal: true}}, 0},
		{"errors keyed by command, parts []", testdata(t, "batch.error.halt0.json"), named, map[string]want{
			"get_user": {code: "insufficient_scope"}, "get_department": {code: "insufficient_scope"}}, 0},
		{"unkeyed errors, no command answered: tied to none", testdata(t, "batch.error.unkeyed.json"), named, map[string]want{
			"get_user": {missing: true}, "get_department": {missing: true}}, 2},
		{"unkeyed errors, commands keyed 0 and 1: PHP's keying by position", testdata(t, "batch.error.unkeyed.json"), indexed,
			map[string]want{"0": {code: "insufficient_scope"}, "1": {code: "insufficient_scope"}}, 0},
		{"unkeyed error beside named results: tied to no command", []byte(`{"result":{"result":{"a":[{"ID":"1"}]},
			"result_error":[{"error":"ACCESS_ERROR","error_description":"You do not have access to the specified dialog"}],
			"result_total":[],"result_next":[],"result_time":[]},"time":{"start":1}}`), three, map[string]want{
			"a": {result: true}, "b": {missing: true}, "c": {missing: true}}, 1},
		{"unkeyed error, one command without a result: its own", []byte(`{"result":{"result":{"a":[],"b":{"id":1}},
			"result_error":[{"error":"ACCESS_ERROR","error_description":""}]},"time":[]}`), three, map[string]want{
			"a": {result: true}, "b": {result: true}, "c": {code: "ACCESS_ERROR"}}, 0},
		{"position keys with a failed command left out, errors as an object", []byte(`{"result":{"result":{"0":[],"2":{"id":1}},
			"result_error":{"1":{"error":100,"error_description":"Could not find value for parameter {id}"}},
			"result_next":{"0":50},"result_total":{"0":50}}}`), three, map[string]want{
			"a": {result: true, total: 50, hasTotal: true}, "b": {code: "100"}, "c": {result: true}}, 0},
		{"a command left out with no error at all", []byte(`{"result":{"result":{"a":[],"c":[]},"result_error":[],
			"result_total":{"a":0,"c":0}}}`), three, map[string]want{
			"a": {result: true, total: 0, hasTotal: true}, "b": {missing: true}, "c": {result: true, total: 0, hasTotal: true}}, 0},
		{"an error keyed by a command not sent", []byte(`{"result":{"result":{"a":[],"b":[],"c":[]},
			"result_error":{"d":{"error":"ERROR_BATCH_LENGTH_EXCEEDED","error_description":"Max batch length exceeded"}}}}`), three,
			map[string]want{"a": {result: true}, "b": {result: true}, "c": {result: true}}, 1},
		{"the whole result PHP's empty array", []byte(`{"result":[],"time":{"start":1}}`), three, map[string]want{
			"a": {missing: true}, "b": {missing: true}, "c": {missing: true}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := serve(t, http.StatusOK, "application/json", tt.body)
			res, err := c.Batch(t.Context(), tt.cmds, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unmatched) != tt.unmatched {
				t.Errorf("%d unmatched errors %v, want %d", len(res.Unmatched), res.Unmatched, tt.unmatched)
			}
			for key, w := range tt.want {
				r, err := res.Response(key)
				switch {
				case w.result:
					if err != nil {
						t.Errorf("%s: %v, want a result", key, err)
						continue
					}
					if w.hasTotal != (r.Total != nil) || (r.Total != nil && *r.Total != w.total) {
						t.Errorf("%s: total %v, want %d (%v)", key, r.Total, w.total, w.hasTotal)
					}
				case w.code != "":
					if !rest.HasCode(err, w.code) || rest.NoResult(err) {
						t.Errorf("%s: %v, want its own error %s", key, err, w.code)
					}
				case w.missing:
					var m *rest.MissingError
					if !errors.As(err, &m) || !rest.NoResult(err) || rest.IsPermanent(err) || m.Key != key {
						t.Errorf("%s: %v, want a MissingError to send again", key, err)
					}
					if _, own := errors.AsType[*rest.APIError](err); own {
						t.Errorf("%s: %v carries an error that may be another command's", key, err)
					}
				}
			}
		})
	}
}

// TestSettleSendsAgainOnlyTheCommandsWithoutAResult: the portal fails two of five commands and
// keys its errors by nothing; Settle sends those two again, not the batch, and a permanent
// refusal of one command ends tied to that command once it is sent alone.
func TestSettleSendsAgainOnlyTheCommandsWithoutAResult(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 20, Seed: 1, Shapes: bitrixfake.Shapes{UnkeyedErrors: true}}, rest.Options{})
	var cmds []rest.Command
	for i, id := range []string{"1", "2", "3", "4", "5"} {
		cmds = append(cmds, rest.Command{Key: "u" + string(rune('a'+i)), Method: "user.get", Params: map[string]any{"ID": id}})
	}
	e.portal.FailCommands("user.get", "INTERNAL_SERVER_ERROR", 2)
	res, err := rest.Settle(t.Context(), e.client.Batch, cmds)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		if r, err := res.Response(cmd.Key); err != nil || len(r.Result) < 10 {
			t.Errorf("%s: %v", cmd.Key, err)
		}
	}
	if got := e.portal.Stats().Calls["user.get"]; got != 3+2 {
		t.Errorf("user.get ran %d times, want 3 answered and the 2 failed sent again", got)
	}

	withBad := append(cmds[:2:2], rest.Command{Key: "bad", Method: "no.such.method"}, cmds[2])
	res, err = rest.Settle(t.Context(), e.client.Batch, withBad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Response("bad"); !rest.HasCode(err, rest.CodeMethodNotFound) {
		t.Errorf("bad: %v, want its own ERROR_METHOD_NOT_FOUND once sent alone", err)
	}
	for _, k := range []string{cmds[0].Key, cmds[1].Key, cmds[2].Key} {
		if _, err := res.Response(k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}

	// A command the portal keeps failing with an error it does not key: bounded, then named.
	e.portal.FailCommands("user.get", "INTERNAL_SERVER_ERROR", 100)
	res, err = rest.Settle(t.Context(), e.client.Batch, cmds[:2])
	if err != nil {
		t.Fatal(err)
	}
	_, err = res.Response(cmds[0].Key)
	if !rest.NoResult(err) || !strings.Contains(err.Error(), cmds[0].Key) {
		// Sent alone, the error is tied to the command: its own error then.
		if !rest.HasCode(err, "INTERNAL_SERVER_ERROR") {
			t.Errorf("after retries: %v, want the command's failure naming it", err)
		}
	}
}

// TestTimeBlockGenerations reads the time block of every generation from the documentation's
// answers, and the fake's.
func TestTimeBlockGenerations(t *testing.T) {
	tests := []struct {
		file                 string
		start, operating     float64
		resetAt, processing0 bool
	}{
		{"batch.json", 1724916859.421475, 0, false, false},                     // no operating*
		{"user.get.json", 1721913235.39648, 0, false, false},                   // operating only
		{"bizproc.workflow.instances.json", 1726476060.581428, 0, true, false}, // operating_reset_at
		{"tasks.task.list.json", 1761054322, 0, true, true},                    // 2025: integer start, processing 0
	}
	for _, tt := range tests {
		c := serve(t, http.StatusOK, "application/json", testdata(t, tt.file))
		r, err := c.Call(t.Context(), "x.list", nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if r.Time.Start != tt.start || r.Time.DateStart == "" || (r.Time.OperatingResetAt > 0) != tt.resetAt ||
			(r.Time.Processing == 0) != tt.processing0 {
			t.Errorf("%s: time %+v", tt.file, r.Time)
		}
	}
	for gen := range 4 {
		e := newEnv(t, bitrixfake.Options{Users: 3, Seed: 1, Shapes: bitrixfake.Shapes{TimeGeneration: gen}}, rest.Options{})
		r, err := e.client.Call(t.Context(), "user.get", nil)
		if err != nil || r.Time.DateStart == "" || r.Time.Start < 1e9 {
			t.Errorf("generation %d: %+v, %v", gen, r, err)
		}
		res, err := e.client.Batch(t.Context(), []rest.Command{{Key: "u", Method: "user.get"}}, false)
		if err != nil || res.Times["u"].Start < 1e9 {
			t.Errorf("generation %d in a batch: %+v, %v", gen, res, err)
		}
	}
	// PHP's empty array for a time block.
	c := serve(t, http.StatusOK, "application/json", []byte(`{"result":[],"total":0,"time":[]}`))
	if r, err := c.Call(t.Context(), "x.list", nil); err != nil || r.Total == nil || *r.Total != 0 || r.Next != nil {
		t.Errorf("empty list answer: %+v, %v", r, err)
	}
}

// TestErrorCodeShapes: codes as "", the string "100", the integer 100 and symbolic ones, from the
// documentation's answers; a plain-text 503 QUERY_LIMIT_EXCEEDED is a rate limit.
func TestErrorCodeShapes(t *testing.T) {
	integer := bytes.Replace(testdata(t, "tasks.task.get.error.json"), []byte(`"100"`), []byte(`100`), 1)
	tests := []struct {
		name      string
		status    int
		ctype     string
		body      []byte
		code      string
		permanent bool
	}{
		{"empty code", 400, "application/json", testdata(t, "crm.company.list.error.json"), "", true},
		{"string 100", 400, "application/json", testdata(t, "tasks.task.get.error.json"), "100", true},
		{"integer 100", 400, "application/json", integer, "100", true},
		{"symbolic", 403, "application/json", []byte(`{"error":"ACCESS_DENIED","error_description":"Access denied!"}`), "ACCESS_DENIED", true},
		{"plain-text query limit", 503, "text/plain", []byte("QUERY_LIMIT_EXCEEDED\n"), rest.CodeQueryLimitExceeded, false},
	}
	for _, tt := range tests {
		c := serve(t, tt.status, tt.ctype, tt.body)
		_, err := c.Call(t.Context(), "x.get", nil)
		apiErr, ok := errors.AsType[*rest.APIError](err)
		if !ok || apiErr.Code != tt.code || rest.IsPermanent(err) != tt.permanent {
			t.Errorf("%s: %#v (%v), want code %q, permanent %v", tt.name, apiErr, err, tt.code, tt.permanent)
		}
	}
	e := newEnv(t, bitrixfake.Options{Users: 3, Seed: 1, Shapes: bitrixfake.Shapes{PlainQueryLimit: true}}, rest.Options{})
	e.portal.FailNext("", bitrixfake.FaultQueryLimit, 1)
	if _, err := e.client.Batch(t.Context(), []rest.Command{{Key: "a", Method: "user.get"}}, false); err != nil {
		t.Fatalf("a plain-text 503 was not retried as a rate limit: %v", err)
	}
	if s := e.client.Stats(); s.QueryLimit != 1 {
		t.Errorf("client stats %+v, want the refusal counted as QUERY_LIMIT_EXCEEDED", s)
	}
	for _, code := range []string{"", "100", "int:100"} {
		e := newEnv(t, bitrixfake.Options{Users: 3, Seed: 1, Shapes: bitrixfake.Shapes{ErrorCode: &code}}, rest.Options{})
		_, err := e.client.Call(t.Context(), "no.such.method", nil)
		if apiErr, ok := errors.AsType[*rest.APIError](err); !ok || apiErr.HTTPStatus != 404 || apiErr.Code != strings.TrimPrefix(code, "int:") {
			t.Errorf("code %q: %v", code, err)
		}
	}
}

// TestListingsDoNotTrustTotal: a total that is the page's size (next: 50, total: 50) does not end
// a listing; the absence of next does.
func TestListingsDoNotTrustTotal(t *testing.T) {
	const users = 173
	for _, shapes := range []bitrixfake.Shapes{{PageTotal: true}, {PageTotal: true, PositionKeys: true, UnkeyedErrors: true}} {
		e := newEnv(t, bitrixfake.Options{Users: users, Seed: 3, Shapes: shapes}, rest.Options{})
		seen := map[string]bool{}
		collect := func(p rest.Page) error {
			for _, row := range p.Rows {
				var r struct{ ID rest.ID }
				if err := json.Unmarshal(row, &r); err != nil {
					return err
				}
				seen[string(r.ID)] = true
			}
			return nil
		}
		err := e.client.ListByStart(t.Context(), rest.List{Method: "user.get", Params: map[string]any{"sort": "ID", "order": "ASC"}}, 0, collect)
		if err != nil || len(seen) != users {
			t.Errorf("%+v: ListByStart read %d of %d users: %v", shapes, len(seen), users, err)
		}
		clear(seen)
		if err := e.client.ListByID(t.Context(), rest.UsersScan(nil), "", collect); err != nil || len(seen) != users {
			t.Errorf("%+v: ListByID read %d of %d users: %v", shapes, len(seen), users, err)
		}
		b, err := e.client.ScanBounds(t.Context(), rest.UsersScan(nil), "0")
		if err != nil || b.Total != rest.PageSize || len(b.First.Rows) != rest.PageSize || b.First.Last {
			t.Errorf("%+v: bounds %+v, %v: want the page-size total as sent and a first page that is not the last", shapes, b.Total, err)
		}
	}
}

// TestDecodeTakesPHPEmptyArrayForAnObject: a get's result, or a member, sent as [] where the
// answer is an object.
func TestDecodeTakesPHPEmptyArrayForAnObject(t *testing.T) {
	var card struct {
		ID     rest.ID        `json:"id"`
		Params map[string]any `json:"params"`
		Users  []string       `json:"users"`
	}
	r := &rest.Response{Result: json.RawMessage(`{"id":5,"params":[],"users":{}}`)}
	if err := r.Decode(&card); err != nil || card.ID != "5" || card.Params == nil || len(card.Users) != 0 {
		t.Errorf("Decode = %+v, %v", card, err)
	}
	r = &rest.Response{Result: json.RawMessage(`[]`)}
	if err := r.Decode(&card); err != nil {
		t.Errorf("Decode of [] into a struct: %v", err)
	}
	r = &rest.Response{Result: json.RawMessage(`{"id":"x","params":"text"}`)}
	if err := r.Decode(&card); err == nil {
		t.Errorf("Decode of a string into a map succeeded")
	}
}

// TestGrandTotal: a total is the count of every row only when the page does not contradict it.
func TestGrandTotal(t *testing.T) {
	n := func(v int) *int { return &v }
	tests := []struct {
		name        string
		next, total *int
		rows        int
		want        bool
	}{
		{"documented first page", n(50), n(94), 50, true},
		{"the page's size (recorded)", n(50), n(50), 50, false},
		{"last page", nil, n(94), 44, true},
		{"empty list", nil, n(0), 0, true},
		{"fewer rows counted than listed", nil, n(3), 5, false},
		{"no total", n(50), nil, 50, false},
	}
	for _, tt := range tests {
		r := &rest.Response{Next: tt.next, Total: tt.total}
		if _, ok := r.GrandTotal(tt.rows); ok != tt.want {
			t.Errorf("%s: grand total %v, want %v", tt.name, ok, tt.want)
		}
	}
}

// TestUnmatchedOperatingLimitPausesTheMethodsWithoutAResult: an OPERATION_TIME_LIMIT in an unkeyed
// result_error belongs to one of the commands without a result; their method is paused before
// they are sent again, the answered ones' is not.
func TestUnmatchedOperatingLimitPausesTheMethodsWithoutAResult(t *testing.T) {
	body := []byte(`{"result":{"result":{"a":[]},"result_error":[{"error":"OPERATION_TIME_LIMIT",
		"error_description":"Method is blocked due to operation time limit."}]},"time":{"start":1}}`)
	var slept time.Duration
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	now := time.Unix(1_700_000_000, 0)
	c, err := rest.New(srv.URL+"/rest/1/tok/", rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error {
			slept += d
			now = now.Add(d)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	cmds := []rest.Command{{Key: "a", Method: "user.get"}, {Key: "b", Method: "im.dialog.get"}, {Key: "c", Method: "im.dialog.get"}}
	res, err := c.Batch(t.Context(), cmds, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Response("b"); !rest.NoResult(err) || rest.HasCode(err, rest.CodeOperationTimeLimit) {
		t.Errorf("b: %v, want no result, and no error of its own", err)
	}
	if s := c.Stats(); s.OperationLimit != 1 {
		t.Errorf("stats %+v, want the refusal counted", s)
	}
	if _, err := c.Call(t.Context(), "user.get", nil); err != nil || slept != 0 {
		t.Errorf("user.get waited %v (%v): it answered, its method is not paused", slept, err)
	}
	_, _ = c.Call(t.Context(), "im.dialog.get", nil)
	if slept == 0 {
		t.Errorf("im.dialog.get was sent at once: its method should be paused")
	}
}
