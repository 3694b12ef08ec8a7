package importapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/httplimit/httplimittest"
)

// front serves the fake target behind paths that misbehave: /bomb/ answers a gzip bomb,
// /away/ redirects with status to the same path on other, /moved/ with status to the same path
// on this origin.
func front(fake http.Handler, bomb *gzipbomb.Bomb, status int, other string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/bomb/"):
			bomb.Serve(w)
		case strings.HasPrefix(r.URL.Path, "/away/"):
			http.Redirect(w, r, other+strings.TrimPrefix(r.URL.Path, "/away"), status)
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			http.Redirect(w, r, strings.TrimPrefix(r.URL.Path, "/moved"), status)
		default:
			fake.ServeHTTP(w, r)
		}
	})
}

func clientAt(t *testing.T, base, prefix, token string, opts Options) *Client {
	t.Helper()
	raw := strings.Replace(base, "://", "://import:"+token+"@", 1) + prefix + "/api/v1"
	c, err := New(raw, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGzipBombFailsTheRequest(t *testing.T) {
	fake := targetfake.New(targetfake.Options{})
	bomb := gzipbomb.New([]byte(`{"results":[`), 64<<30)
	srv := httptest.NewServer(front(fake, bomb, 0, ""))
	defer srv.Close()
	const limit = 1 << 20
	c := clientAt(t, srv.URL, "/bomb", fake.Token(), Options{MaxAnswerBytes: limit})
	var err error
	alloc := httplimittest.Allocated(func() { _, err = c.Import(t.Context(), "users", items(`{"a":1}`)) })
	var te *Error
	if !errors.As(err, &te) || !errors.Is(err, httplimit.ErrTooLarge) || te.Retryable() {
		t.Fatalf("err %v, want a target Error wrapping ErrTooLarge, not retryable", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "target import.users.batch") || !strings.Contains(msg, "answer larger than 1048576 bytes") || strings.Contains(msg, fake.Token()) {
		t.Errorf("error %q", msg)
	}
	if alloc > 3*limit+8<<20 {
		t.Errorf("allocated %d bytes for a cap of %d", alloc, limit)
	}
	if bomb.Written() > bomb.Compressed()/4 {
		t.Errorf("the client took %d of the bomb's %d bytes", bomb.Written(), bomb.Compressed())
	}
}

// TestRedirects: the target's token is a bearer header Go keeps on a redirect to the same host
// name; only the configured origin ever gets it, and a batch is re-posted only there, on 307 or
// 308.
func TestRedirects(t *testing.T) {
	other := &httplimittest.Recorder{}
	otherHost := httplimittest.Serve(t, httplimittest.OtherHost, other)
	otherPort := httplimittest.Serve(t, "127.0.0.1", other)
	for _, tc := range []struct {
		name, prefix string
		to           *httptest.Server
		status       int
		tls          bool
		want         string // "" for success
	}{
		{"307 to another host", "/away", otherHost, http.StatusTemporaryRedirect, false, "another origin"},
		{"308 to another port, same host name", "/away", otherPort, http.StatusPermanentRedirect, false, "another origin"},
		{"307 from https to http", "/away", otherPort, http.StatusTemporaryRedirect, true, "leaves https for plain http"},
		{"307 within the origin", "/moved", nil, http.StatusTemporaryRedirect, false, ""},
		{"308 within the origin", "/moved", nil, http.StatusPermanentRedirect, false, ""},
		{"302 within the origin", "/moved", nil, http.StatusFound, false, "would turn the POST into a GET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := targetfake.New(targetfake.Options{})
			to := ""
			if tc.to != nil {
				to = tc.to.URL
			}
			h := front(fake, nil, tc.status, to)
			var srv *httptest.Server
			opts := Options{}
			if tc.tls {
				srv = httptest.NewTLSServer(h)
				opts.HTTPClient = srv.Client()
			} else {
				srv = httptest.NewServer(h)
			}
			defer srv.Close()
			c := clientAt(t, srv.URL, tc.prefix, fake.Token(), opts)
			res, err := c.Import(t.Context(), "users", items(`{"a":1}`))
			if tc.want == "" {
				if err != nil || len(res) != 1 || res[0].Status != "created" {
					t.Fatalf("got %+v, %v; want the batch imported", res, err)
				}
				return
			}
			var te *Error
			if !errors.As(err, &te) || te.Retryable() || te.HTTPStatus != tc.status {
				t.Fatalf("err %v, want a non-retryable target Error with HTTP %d", err, tc.status)
			}
			var re *httplimit.RedirectError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), fake.Token()) {
				t.Errorf("error %q, want a RedirectError saying %q, without the token", err, tc.want)
			}
			if tc.to != nil && !strings.Contains(re.Location, tc.to.URL+"/api/v1/import.users.batch") {
				t.Errorf("Location %q does not name where it pointed", re.Location)
			}
		})
	}
	if got := other.Requests(); len(got) != 0 {
		t.Errorf("the other origin got %d requests: %q", len(got), got)
	}
}
