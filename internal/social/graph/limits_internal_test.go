package graph

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/httplimit/httplimittest"
	"github.com/ingest-dev/ingest/internal/retry"
)

const secretToken = "EAAB0secret0token0value"

func testClient(t *testing.T, base string, tr http.RoundTripper) *Client {
	t.Helper()
	c, err := New(Options{BaseURL: base + "/v23.0", Retry: &retry.Policy{Delays: []time.Duration{0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if tr != nil {
		c.http.Transport = tr
	}
	return c
}

func mediaRequest() Request {
	return Request{Endpoint: "media", Path: "17841405822304914/media", Params: url.Values{"limit": {"100"}}, Token: secretToken}
}

// TestGzipBombFailsTheRequestOnce: a 64 GiB bomb fails the request at the 16 MiB cap, once (it
// is not retried), costing about the cap.
func TestGzipBombFailsTheRequestOnce(t *testing.T) {
	bomb := gzipbomb.New([]byte(`{"data":[`), 64<<30)
	srv := httptest.NewServer(bomb)
	defer srv.Close()
	c := testClient(t, srv.URL, nil)
	var err error
	alloc := httplimittest.Allocated(func() { _, err = c.Get(t.Context(), mediaRequest()) })
	if !errors.Is(err, httplimit.ErrTooLarge) || IsRetryable(err) || CallsOf(err) != 1 {
		t.Fatalf("err %v (calls %d), want ErrTooLarge, not retried", err, CallsOf(err))
	}
	msg := err.Error()
	if !strings.Contains(msg, "graph media: GET "+srv.URL+"/v23.0/17841405822304914/media?access_token=xxxxx") ||
		!strings.Contains(msg, "answer larger than 16777216 bytes") || strings.Contains(msg, secretToken) {
		t.Errorf("error %q", msg)
	}
	if alloc > 3*maxBody+8<<20 {
		t.Errorf("allocated %d bytes for a cap of %d", alloc, maxBody)
	}
	if bomb.Written() > bomb.Compressed()/4 {
		t.Errorf("the client took %d of the bomb's %d bytes", bomb.Written(), bomb.Compressed())
	}
}

// TestRedirects: the token is in the query of every request; it reaches nothing but the base
// URL's origin.
func TestRedirects(t *testing.T) {
	other := &httplimittest.Recorder{}
	otherHost := httplimittest.Serve(t, httplimittest.OtherHost, other)
	otherPort := httplimittest.Serve(t, "127.0.0.1", other)
	redirector := func(to string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v23.0/new/") {
				_, _ = w.Write([]byte(`{"data":[]}`))
				return
			}
			if to == "" { // within the origin
				http.Redirect(w, r, strings.Replace(r.URL.RequestURI(), "/v23.0/", "/v23.0/new/", 1), http.StatusMovedPermanently)
				return
			}
			http.Redirect(w, r, to+r.URL.RequestURI(), http.StatusFound)
		})
	}
	for _, tc := range []struct {
		name string
		to   string
		tls  bool
		want string // "" for success
	}{
		{"another host", otherHost.URL, false, "another origin"},
		{"another port", otherPort.URL, false, "another origin"},
		{"https to http", otherPort.URL, true, "leaves https for plain http"},
		{"within the origin", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srv *httptest.Server
			var tr http.RoundTripper
			if tc.tls {
				srv = httptest.NewTLSServer(redirector(tc.to))
				tr = srv.Client().Transport
			} else {
				srv = httptest.NewServer(redirector(tc.to))
			}
			defer srv.Close()
			resp, err := testClient(t, srv.URL, tr).Get(t.Context(), mediaRequest())
			if tc.want == "" {
				if err != nil || string(resp.Body) != `{"data":[]}` {
					t.Fatalf("got %v; want the answer of the new address", err)
				}
				return
			}
			var re *httplimit.RedirectError
			if !errors.As(err, &re) || IsRetryable(err) || CallsOf(err) != 1 {
				t.Fatalf("err %v, want a RedirectError, not retried", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, secretToken) ||
				!strings.Contains(re.Location, tc.to+"/v23.0/17841405822304914/media?access_token=xxxxx") {
				t.Errorf("error %q, want it to say %q and where it pointed, without the token", msg, tc.want)
			}
		})
	}
	if got := other.Requests(); len(got) != 0 {
		t.Errorf("the other origin got %d requests: %q", len(got), got)
	}
}
