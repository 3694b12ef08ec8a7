package enrichapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/enrichfake"
	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/httplimit/httplimittest"
)

const testToken = "enrich0secret0token"

func submission() Submission {
	return Submission{IdempotencyToken: "job-1", Kind: "text", Items: []Item{{Ref: "p1", Text: "hello"}}}
}

// TestGzipBombFailsTheCall: a 64 GiB bomb as a job's status fails the call at the cap, not
// retryable (the provider would send the same), costing about the cap.
func TestGzipBombFailsTheCall(t *testing.T) {
	bomb := gzipbomb.New([]byte(`{"job_id":"`), 64<<30)
	srv := httptest.NewServer(bomb)
	defer srv.Close()
	c, err := New(srv.URL+"/v1/text", testToken)
	if err != nil {
		t.Fatal(err)
	}
	// Inflating the cap under the race detector on a busy machine took over the client's 30 s
	// (52 s at load 30): the test is about the cap, so the call has the time go test leaves it.
	c.http.Timeout = time.Hour
	alloc := httplimittest.Allocated(func() { _, err = c.Status(t.Context(), "j1") })
	if !errors.Is(err, httplimit.ErrTooLarge) || IsRetryable(err) {
		t.Fatalf("err %v, want ErrTooLarge, not retryable", err)
	}
	if msg := err.Error(); msg != "enrichment API GET "+srv.URL+"/v1/text/jobs/j1: answer larger than 33554432 bytes (32 MiB)" {
		t.Errorf("error %q", msg)
	}
	if alloc > 3*maxAnswer+8<<20 {
		t.Errorf("allocated %d bytes for a cap of %d", alloc, maxAnswer)
	}
	if bomb.Written() > bomb.Compressed()/4 {
		t.Errorf("the client took %d of the bomb's %d bytes", bomb.Written(), bomb.Compressed())
	}
}

// TestRedirects: the bearer token reaches nothing but the provider's origin; there a
// submission is re-sent on 307 and 308, and a GET follows any redirect.
func TestRedirects(t *testing.T) {
	other := &httplimittest.Recorder{}
	otherHost := httplimittest.Serve(t, httplimittest.OtherHost, other)
	otherPort := httplimittest.Serve(t, "127.0.0.1", other)
	for _, tc := range []struct {
		name   string
		to     string // "" for the same origin
		status int
		tls    bool
		want   string // "" for success
	}{
		{"another host", otherHost.URL, http.StatusTemporaryRedirect, false, "another origin"},
		{"another port", otherPort.URL, http.StatusPermanentRedirect, false, "another origin"},
		{"https to http", otherPort.URL, http.StatusTemporaryRedirect, true, "leaves https for plain http"},
		{"307 within the origin", "", http.StatusTemporaryRedirect, false, ""},
		{"301 within the origin", "", http.StatusMovedPermanently, false, "would turn the POST into a GET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := enrichfake.New(enrichfake.Options{Token: testToken})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if rest, ok := strings.CutPrefix(r.URL.Path, "/old"); ok {
					http.Redirect(w, r, tc.to+rest, tc.status)
					return
				}
				fake.ServeHTTP(w, r)
			})
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewTLSServer(h)
			} else {
				srv = httptest.NewServer(h)
			}
			defer srv.Close()
			c, err := New(srv.URL+"/old/v1/text", testToken)
			if err != nil {
				t.Fatal(err)
			}
			if tc.tls {
				c.http.Transport = srv.Client().Transport
			}
			job, err := c.Submit(t.Context(), submission())
			if tc.want == "" {
				if err != nil || job.ID == "" {
					t.Fatalf("submit: %+v, %v; want the job", job, err)
				}
				if _, err := c.Status(t.Context(), job.ID); err != nil {
					t.Errorf("status: %v", err)
				}
				return
			}
			var re *httplimit.RedirectError
			if !errors.As(err, &re) || IsRetryable(err) || re.Status != tc.status {
				t.Fatalf("err %v, want a RedirectError with HTTP %d, not retryable", err, tc.status)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "enrichment API POST") || strings.Contains(msg, testToken) {
				t.Errorf("error %q, want it to say %q without the token", msg, tc.want)
			}
		})
	}
	if got := other.Requests(); len(got) != 0 {
		t.Errorf("the other origin got %d requests: %q", len(got), got)
	}
}
