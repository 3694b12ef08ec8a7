package bitrixfake

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestShapes: each shape is sent as recorded, and only when asked for.
func TestShapes(t *testing.T) {
	code := "int:100"
	p, srv := start(t, Options{Users: 120, Seed: 7, Shapes: Shapes{UnkeyedErrors: true, PositionKeys: true, PageTotal: true,
		TimeGeneration: 3, ErrorCode: &code}})
	p.FailCommands("user.get", "INTERNAL_SERVER_ERROR", 1)
	batch := `{"halt":0,"cmd":{"a":"user.get?start=0","b":"user.get?start=50","c":"no.such.method","d":"user.get?start=100"}}`
	status, out := call(t, srv, p, "batch", batch)
	res, _ := out["result"].(map[string]any)
	if status != http.StatusOK || res == nil {
		t.Fatalf("batch: %d %v", status, out)
	}
	// a failed (fault) and c failed (no method): result keyed 1 and 3, so an object; errors a list.
	result, _ := res["result"].(map[string]any)
	if len(result) != 2 || result["1"] == nil || result["3"] == nil {
		t.Errorf("result keys: %v, want positions 1 and 3", keys(result))
	}
	errs, ok := res["result_error"].([]any)
	if !ok || len(errs) != 2 {
		t.Fatalf("result_error %v, want an unkeyed list of 2", res["result_error"])
	}
	if e, _ := errs[1].(map[string]any); e["error"] != float64(100) {
		t.Errorf("error code %v, want the integer 100", e["error"])
	}
	totals, _ := res["result_total"].(map[string]any)
	if totals["1"] != float64(50) || totals["3"] != float64(20) {
		t.Errorf("result_total %v, want each page's size (50, 20)", totals)
	}
	times, _ := res["result_time"].(map[string]any)
	tm, _ := times["1"].(map[string]any)
	if start, _ := tm["start"].(float64); start != float64(int64(start)) || tm["processing"] != float64(0) {
		t.Errorf("time block %v, want the 2025 generation", tm)
	}
	if _, out := call(t, srv, p, "user.get", `{"start":50}`); out["total"] != float64(50) || out["next"] != float64(100) {
		t.Errorf("user.get: next %v total %v, want next 100 with the page's size 50", out["next"], out["total"])
	}

	// Without Shapes: the documented answer.
	p, srv = start(t, Options{Users: 120, Seed: 7})
	_, out = call(t, srv, p, "batch", batch)
	res, _ = out["result"].(map[string]any)
	if e, ok := res["result_error"].(map[string]any); !ok || e["c"] == nil {
		t.Errorf("result_error %v, want keyed by command", res["result_error"])
	}
	if _, out := call(t, srv, p, "user.get", `{"start":50}`); out["total"] != float64(120) {
		t.Errorf("total %v, want 120", out["total"])
	}
}

// TestPlainQueryLimit answers the refusal with a plain-text body.
func TestPlainQueryLimit(t *testing.T) {
	p, srv := start(t, Options{Users: 3, Shapes: Shapes{PlainQueryLimit: true}})
	p.FailNext("", FaultQueryLimit, 1)
	resp, err := http.Post(srv.URL+p.WebhookPath()+"user.get.json", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(string(body), "QUERY_LIMIT_EXCEEDED") || strings.HasPrefix(string(body), "{") {
		t.Errorf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
