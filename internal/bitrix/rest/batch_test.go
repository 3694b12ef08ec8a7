package rest_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

func TestBatchChainsCommandsInOrder(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 700, Seed: 1}, rest.Options{})
	// Twelve chained pages: p10 must run after p9, which a JSON object
	// with sorted keys (p0, p1, p10, p11, p2...) would break.
	var cmds []rest.Command
	after := "0"
	for i := range 12 {
		key := "p" + strconv.Itoa(i)
		cmds = append(cmds, rest.Command{Key: key, Method: "user.get", Params: map[string]any{
			"FILTER": map[string]any{">ID": after}, "start": -1, "select": []string{"ID"}}})
		after = rest.Ref(key, "49", "ID")
	}
	res, err := e.client.Batch(t.Context(), cmds, true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, cmd := range cmds {
		resp, err := res.Response(cmd.Key)
		if err != nil {
			t.Fatalf("%s: %v", cmd.Key, err)
		}
		var rows []struct{ ID rest.ID }
		if err := resp.Decode(&rows); err != nil || len(rows) != 50 {
			t.Fatalf("%s: %d rows, %v", cmd.Key, len(rows), err)
		}
		for _, r := range rows {
			if seen[string(r.ID)] {
				t.Fatalf("%s repeats ID %s", cmd.Key, r.ID)
			}
			seen[string(r.ID)] = true
		}
	}
	if len(seen) != 600 || e.portal.Stats().Requests != 1 {
		t.Errorf("%d distinct users in %d requests, want 600 in 1", len(seen), e.portal.Stats().Requests)
	}
}

func TestBatchSectionsAndErrors(t *testing.T) {
	t.Run("every section empty but errors", func(t *testing.T) {
		e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1, Scopes: []string{}}, rest.Options{})
		res, err := e.client.Batch(t.Context(), []rest.Command{
			{Key: "get_user", Method: "user.current"},
			{Key: "get_department", Method: "user.get", Params: map[string]any{"ID": 1}},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Results) != 0 || len(res.Totals) != 0 || len(res.Nexts) != 0 || len(res.Times) != 0 || len(res.Errors) != 2 {
			t.Fatalf("got %+v", res)
		}
		_, err = res.Response("get_department")
		if !rest.HasCode(err, rest.CodeInsufficientScope) || !strings.Contains(err.Error(), `bitrix user.get`) ||
			!strings.Contains(err.Error(), `"user" scope`) {
			t.Errorf("command error %v, want insufficient_scope naming user.get and its scope", err)
		}
	})
	t.Run("halt skips the rest", func(t *testing.T) {
		e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{})
		res, err := e.client.Batch(t.Context(), []rest.Command{
			{Key: "ok", Method: "user.get", Params: map[string]any{"ID": 1}},
			{Key: "bad", Method: "no.such.method"},
			{Key: "skipped", Method: "user.get"},
		}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := res.Response("ok"); err != nil {
			t.Errorf("ok: %v", err)
		}
		if _, err := res.Response("bad"); !rest.HasCode(err, rest.CodeMethodNotFound) {
			t.Errorf("bad: %v", err)
		}
		if _, err := res.Response("skipped"); !errors.Is(err, rest.ErrNotExecuted) {
			t.Errorf("skipped: %v, want ErrNotExecuted", err)
		}
	})
	t.Run("numeric keys arrive as lists", func(t *testing.T) {
		e := newEnv(t, bitrixfake.Options{Users: 120, Seed: 1}, rest.Options{})
		res, err := e.client.Batch(t.Context(), []rest.Command{
			{Key: "0", Method: "user.get"},
			{Key: "1", Method: "user.get", Params: map[string]any{"start": 50}},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Totals["0"] != 120 || res.Nexts["1"] != 100 || len(res.Results) != 2 {
			t.Errorf("totals %v nexts %v results %d", res.Totals, res.Nexts, len(res.Results))
		}
	})
}

func TestBatchRejectsBadInput(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{})
	tooMany := make([]rest.Command, rest.MaxBatch+1)
	for i := range tooMany {
		tooMany[i] = rest.Command{Key: "k" + strconv.Itoa(i), Method: "user.get"}
	}
	tests := map[string][]rest.Command{
		"empty":         nil,
		"too many":      tooMany,
		"duplicate key": {{Key: "a", Method: "user.get"}, {Key: "a", Method: "user.get"}},
		"bad key":       {{Key: "a]&b", Method: "user.get"}},
		"bad method":    {{Key: "a", Method: "user.get?x=1"}},
		"nested batch":  {{Key: "a", Method: "batch"}},
	}
	for name, cmds := range tests {
		if _, err := e.client.Batch(t.Context(), cmds, false); err == nil {
			t.Errorf("%s: Batch succeeded", name)
		}
	}
	if got := e.portal.Stats().Requests; got != 0 {
		t.Errorf("%d requests sent for invalid batches", got)
	}
}

func TestBatchIsRetriedOnlyWhenAllCommandsRead(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{})
	e.portal.FailNext("batch", bitrixfake.FaultServerError, 1)
	if _, err := e.client.Batch(t.Context(), []rest.Command{{Key: "a", Method: "user.get"}}, false); err != nil {
		t.Errorf("read batch: %v, want it retried", err)
	}
	e.portal.FailNext("batch", bitrixfake.FaultServerError, 1)
	_, err := e.client.Batch(t.Context(), []rest.Command{
		{Key: "a", Method: "user.get"},
		{Key: "b", Method: "user.userfield.add", Params: map[string]any{"fields": map[string]any{"FIELD_NAME": "X"}}},
	}, false)
	if err == nil {
		t.Error("batch with a write was retried after a 502")
	}
	if s := e.client.Stats(); s.Requests != 3 || s.Retries != 1 {
		t.Errorf("stats %+v, want 3 requests and 1 retry", s)
	}
}

// TestBatchDecodesTheDocsSamples serves the documentation's batch answers
// verbatim: sections as objects or as [], dates in mixed formats.
func TestBatchDecodesTheDocsSamples(t *testing.T) {
	cmds := []rest.Command{
		{Key: "get_user", Method: "user.get", Params: map[string]any{"ID": 1}},
		{Key: "get_department", Method: "department.get", Params: map[string]any{"ID": rest.Ref("get_user", "UF_DEPARTMENT", "0")}},
	}
	tests := []struct {
		sample                                   string
		results, errs, totals, nexts, timesCount int
	}{
		{"batch.json", 2, 0, 1, 0, 2},
		{"batch.error.halt0.json", 0, 2, 0, 0, 0},
		{"batch.error.halt1.json", 0, 1, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			body, err := fs.ReadFile(fixtures.Bitrix(), tt.sample)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			c, err := rest.New(srv.URL+"/rest/1/tok/", rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Batch(t.Context(), cmds, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != tt.results || len(res.Errors) != tt.errs || len(res.Totals) != tt.totals ||
				len(res.Nexts) != tt.nexts || len(res.Times) != tt.timesCount {
				t.Errorf("results %d errors %d totals %d nexts %d times %d", len(res.Results), len(res.Errors),
					len(res.Totals), len(res.Nexts), len(res.Times))
			}
			if tt.errs > 0 {
				_, err := res.Response("get_user")
				if !rest.HasCode(err, rest.CodeInsufficientScope) || !strings.Contains(err.Error(), "bitrix user.get") {
					t.Errorf("get_user: %v", err)
				}
				return
			}
			resp, err := res.Response("get_department")
			if err != nil || resp.Total == nil || *resp.Total != 1 {
				t.Fatalf("get_department: %+v, %v", resp, err)
			}
			var user map[string]json.RawMessage
			if err := json.Unmarshal(res.Results["get_user"], &user); err != nil || string(user["TIMESTAMP_X"]) != `"24.08.2023 13:19:39"` {
				t.Errorf("get_user = %s, %v", res.Results["get_user"], err)
			}
		})
	}
}
