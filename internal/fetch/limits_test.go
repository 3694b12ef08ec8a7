package fetch

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/httplimit/httplimittest"
)

// TestGzipBombStopsAtTheCap: a 64 GiB bomb (Habr's pages come gzipped) fails at the 10 MiB
// default cap as a network error naming the URL, costing about the cap.
func TestGzipBombStopsAtTheCap(t *testing.T) {
	bomb := gzipbomb.New([]byte("<html><body><p>"), 64<<30)
	srv := httptest.NewServer(bomb)
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	var err error
	alloc := httplimittest.Allocated(func() { _, err = c.Get(t.Context(), "/ru/articles/1/") })
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, httplimit.ErrTooLarge) || !IsNetwork(err) {
		t.Fatalf("err %v, want ErrTooLarge, a network error", err)
	}
	if want := "fetch " + srv.URL + "/ru/articles/1/: body too large: answer larger than 10485760 bytes (10 MiB)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if alloc > 3*DefaultMaxBodyBytes+8<<20 {
		t.Errorf("allocated %d bytes for a cap of %d", alloc, DefaultMaxBodyBytes)
	}
	if bomb.Written() > bomb.Compressed()/4 {
		t.Errorf("the client took %d of the bomb's %d bytes", bomb.Written(), bomb.Compressed())
	}
}

// TestRedirectsAreNotFollowed: Habr's pages are fetched from one origin; a redirect anywhere,
// the same origin included, is reported with where it pointed and followed nowhere.
func TestRedirectsAreNotFollowed(t *testing.T) {
	other := &httplimittest.Recorder{}
	otherHost := httplimittest.Serve(t, httplimittest.OtherHost, other)
	for _, tc := range []struct {
		name, to string
		tls      bool
	}{
		{"another host", otherHost.URL + "/ru/articles/2/", false},
		{"https to http", otherHost.URL + "/ru/articles/2/", true},
		{"the same origin", "/ru/articles/2/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/ru/articles/2/" {
					hits.Add(1)
				}
				http.Redirect(w, r, tc.to, http.StatusMovedPermanently)
			})
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewTLSServer(h)
			} else {
				srv = httptest.NewServer(h)
			}
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			if tc.tls {
				c.http.Transport = srv.Client().Transport
			}
			_, err := c.Get(t.Context(), "/ru/articles/1/")
			var se *StatusError
			if !errors.As(err, &se) || se.Code != http.StatusMovedPermanently || !strings.Contains(err.Error(), "Location: "+tc.to) {
				t.Fatalf("err %v, want a 301 StatusError naming %s", err, tc.to)
			}
			if hits.Load() != 0 {
				t.Errorf("the redirect was followed")
			}
		})
	}
	if got := other.Requests(); len(got) != 0 {
		t.Errorf("the other origin got %d requests: %q", len(got), got)
	}
}
