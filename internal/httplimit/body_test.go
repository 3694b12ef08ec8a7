package httplimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
	"github.com/ingest-dev/ingest/internal/httplimit"
)

// allocated returns the bytes f allocated (the whole process's, so a bound on it is a bound
// on what f held).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestGzipBombFailsAtTheCap reads a 1 GiB bomb through both paths: the transport gunzipping
// (the client did not ask for gzip itself) and ReadBody gunzipping (it did).
func TestGzipBombFailsAtTheCap(t *testing.T) {
	const limit = 1 << 20
	bomb := gzipbomb.New([]byte(`{"result":"`), 1<<30)
	srv := httptest.NewServer(bomb)
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		asks    bool // the client sets Accept-Encoding itself
		uncompr bool // want resp.Uncompressed
	}{
		{"transport gunzips", false, true},
		{"ReadBody gunzips", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/x", nil)
			if tc.asks {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Uncompressed != tc.uncompr {
				t.Fatalf("Uncompressed %v, want %v", resp.Uncompressed, tc.uncompr)
			}
			var body []byte
			alloc := allocated(func() { body, err = httplimit.ReadBody(resp, limit, "GET /x") })
			var tl *httplimit.TooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, httplimit.ErrTooLarge) || body != nil {
				t.Fatalf("got %d bytes, err %v; want a TooLargeError", len(body), err)
			}
			if want := "GET /x: answer larger than 1048576 bytes (1 MiB)"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			// The buffer grows to limit+1 by doubling: under 2*limit, plus the gzip reader's
			// window and the transport's buffers. Inflating the bomb would take 1 GiB.
			if alloc > 4*limit+(1<<20) {
				t.Errorf("allocated %d bytes reading a bomb capped at %d", alloc, limit)
			}
		})
	}
}

func TestReadBodyRefusesAnAnnouncedLengthOverTheCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2000")
		_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := httplimit.ReadBody(resp, 1000, "GET /"); !errors.Is(err, httplimit.ErrTooLarge) {
		t.Errorf("err %v, want ErrTooLarge", err)
	}
}

func TestReadBodyRefusesAnEncodingItDidNotAskFor(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		_, _ = w.Write([]byte("x"))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := httplimit.ReadBody(resp, 1000, "GET /"); err == nil || !strings.Contains(err.Error(), `unsupported Content-Encoding "br"`) {
		t.Errorf("err %v", err)
	}
}
