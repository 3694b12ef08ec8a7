package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/fixtures"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(fixtures.Social(), name)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return b
}

func TestEndRulesOnRealPages(t *testing.T) {
	tests := []struct {
		file string
		path []string
		rule graph.EndRule
		n    int
		more bool
	}{
		{"ig_user_media_page1.json", nil, graph.EndWithoutNext, 2, true},
		{"ig_user_media_page2_carousel_children.json", nil, graph.EndWithoutNext, 2, false}, // previous only
		{"ig_media_comments_page1.json", nil, graph.EndWithoutNext, 2, true},
		{"ig_media_comments_page2_last.json", nil, graph.EndWithoutNext, 2, false}, // no paging at all
		{"ig_user_stories.json", nil, graph.EndWithoutNext, 2, false},              // cursors, no next
		{"ig_business_discovery_media_page1.json", []string{"business_discovery", "media"}, graph.EndWithoutAfter, 2, true},
		{"ig_business_discovery_media_page2.json", []string{"business_discovery", "media"}, graph.EndWithoutAfter, 2, true},
		{"ig_business_discovery_profile.json", []string{"business_discovery", "media"}, graph.EndWithoutAfter, 0, false},
	}
	for _, tt := range tests {
		e, err := graph.EdgeAt(fixture(t, tt.file), tt.path...)
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if len(e.Data) != tt.n {
			t.Errorf("%s: %d items, want %d", tt.file, len(e.Data), tt.n)
		}
		if _, got := tt.rule.Next(e); got != tt.more {
			t.Errorf("%s: more = %v, want %v", tt.file, got, tt.more)
		}
	}
	// An empty page that links a next one is not the end, even when it hands back the cursor it
	// was asked with; the next request takes the next link's after.
	empty := &graph.Edge{}
	if err := json.Unmarshal([]byte(`{"data":[],"paging":{"cursors":{"before":"QVFI","after":"QVFI"},"next":"https://x/y?limit=100&after=QVFJ"}}`), empty); err != nil {
		t.Fatal(err)
	}
	if c, more := graph.EndWithoutNext.Next(empty); !more || c != "QVFJ" {
		t.Errorf("an empty page with next: cursor %q, more %v; want QVFJ, true", c, more)
	}
	if c, more := graph.EndWithoutAfter.Next(empty); !more || c != "QVFI" {
		t.Errorf("business discovery, an empty page with an after cursor: cursor %q, more %v; want QVFI, true", c, more)
	}
	noLink := &graph.Edge{}
	if err := json.Unmarshal([]byte(`{"data":[],"paging":{"cursors":{"after":"QVFI"}}}`), noLink); err != nil {
		t.Fatal(err)
	}
	if _, more := graph.EndWithoutNext.Next(noLink); more {
		t.Error("a page without next was not taken as the end")
	}
}

func TestUsageHeaders(t *testing.T) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(fixture(t, "header_x_business_use_case_usage_instagram.json"), &f); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("X-Business-Use-Case-Usage", string(f["x-business-use-case-usage"]))
	h.Set("X-App-Usage", `{"call_count":91,"total_cputime":12,"total_time":40}`)
	u := graph.ParseUsage(h)
	if u.AppPercent() != 91 || u.BusinessPercent() != 29 || u.RegainAfter() != 0 {
		t.Errorf("usage = app %v business %v regain %v, want 91, 29, 0", u.AppPercent(), u.BusinessPercent(), u.RegainAfter())
	}
	h.Set("X-Business-Use-Case-Usage", `{"1784":[{"type":"instagram","call_count":100,"total_cputime":3,"total_time":4,"estimated_time_to_regain_access":7}]}`)
	if got := graph.ParseUsage(h).RegainAfter(); got != 7*time.Minute {
		t.Errorf("regain = %v, want 7m", got)
	}
	h.Set("X-App-Usage", "not json")
	if u := graph.ParseUsage(h); u.App != nil {
		t.Errorf("malformed X-App-Usage read as %v", u.App)
	}
}

// server answers every request with the next of answers (status, body, header value of
// X-Business-Use-Case-Usage), repeating the last.
func server(t *testing.T, answers ...[3]string) (*httptest.Server, *atomic.Int32, *atomic.Value) {
	t.Helper()
	var n atomic.Int32
	var lastQuery atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastQuery.Store(r.URL.RawQuery)
		i := min(int(n.Add(1))-1, len(answers)-1)
		a := answers[i]
		if a[2] != "" {
			w.Header().Set("X-Business-Use-Case-Usage", a[2])
		}
		var code int
		fmt.Sscan(a[0], &code)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(a[1]))
	}))
	t.Cleanup(srv.Close)
	return srv, &n, &lastQuery
}

func client(t *testing.T, base string) *graph.Client {
	t.Helper()
	c, err := graph.New(graph.Options{BaseURL: base + "/v23.0", UserAgent: "test",
		Retry: &retry.Policy{Delays: []time.Duration{0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const token = "EAAGsecretTOKEN0123456789"

func TestErrorsAreClassifiedByCodeNotStatus(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		file                string
		status              string
		throttled, platform bool
	}{
		{"airbyte_test_ig_rate_limit_error_code80002.json", "400", true, false},
		{"airbyte_test_app_rate_limit_error_code4.json", "400", true, true},
		{"metadocs_rate_limit_error_code32.json", "400", true, true},
		{"metadocs_buc_rate_limit_error_code80001.json", "400", true, false},
		{"graph_error_code100_permission.json", "400", false, false},
	}
	for _, tt := range tests {
		srv, n, _ := server(t, [3]string{tt.status, string(fixture(t, tt.file)),
			`{"17841400455970028":[{"type":"instagram","call_count":100,"total_cputime":10,"total_time":10,"estimated_time_to_regain_access":3}]}`})
		_, err := client(t, srv.URL).Get(ctx, graph.Request{Endpoint: "media", Path: "1/media", Token: token})
		ae, ok := graph.AsAPI(err)
		if !ok {
			t.Fatalf("%s: %v, want an *APIError", tt.file, err)
		}
		if ae.Throttled() != tt.throttled || ae.PlatformLimit() != tt.platform {
			t.Errorf("%s: throttled %v platform limit %v, want %v %v", tt.file, ae.Throttled(), ae.PlatformLimit(), tt.throttled, tt.platform)
		}
		if tt.throttled && ae.RegainAfter != 3*time.Minute {
			t.Errorf("%s: regain %v, want 3m from the header", tt.file, ae.RegainAfter)
		}
		// Throttling and permanent answers are not retried in-process.
		if n.Load() != 1 || graph.CallsOf(err) != 1 {
			t.Errorf("%s: %d requests, want 1", tt.file, n.Load())
		}
	}
}

func TestTransientAnswersAreRetriedAndTokensNeverLeak(t *testing.T) {
	ctx := context.Background()
	srv, n, q := server(t,
		[3]string{"500", `{"error":{"message":"An unexpected error has occurred. Please retry your request later.","type":"OAuthException","is_transient":true,"code":2}}`},
		[3]string{"200", `{"data":[],"paging":{"cursors":{"after":"A"},"next":"https://graph.facebook.com/v23.0/1/media?access_token=` + token + `&after=A"}}`})
	resp, err := client(t, srv.URL).Get(ctx, graph.Request{Endpoint: "media", Path: "1/media", Params: url.Values{"limit": {"100"}}, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 || resp.Calls != 2 {
		t.Errorf("%d requests (%d counted), want 2", n.Load(), resp.Calls)
	}
	if !strings.Contains(q.Load().(string), "access_token="+token) {
		t.Error("the token was not sent as access_token")
	}
	if strings.Contains(string(resp.Body), token) || !strings.Contains(string(resp.Body), "access_token=xxxxx&after=A") {
		t.Errorf("the token in the paging link was not masked: %s", resp.Body)
	}

	// An expired token: code 190, not retried, the message free of the token.
	srv, _, _ = server(t, [3]string{"400", `{"error":{"message":"Error validating access token: Session has expired. access_token=` + token + `","type":"OAuthException","code":190,"error_subcode":463}}`})
	_, err = client(t, srv.URL).Get(ctx, graph.Request{Endpoint: "profile", Path: "1", Token: token})
	if ae, ok := graph.AsAPI(err); !ok || !ae.TokenInvalid() {
		t.Errorf("expired token: %v, want TokenInvalid", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error shows the token: %v", err)
	}

	// A connection failure names no URL (it would carry the token).
	srv.Close()
	_, err = client(t, srv.URL).Get(ctx, graph.Request{Endpoint: "profile", Path: "1", Token: token})
	var te *graph.TransportError
	if !errors.As(err, &te) || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "access_token") {
		t.Errorf("connection failure: %v", err)
	}
	if graph.CallsOf(err) != 3 {
		t.Errorf("connection failure took %d calls, want 3 (two retries)", graph.CallsOf(err))
	}
}
