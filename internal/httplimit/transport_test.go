package httplimit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
	"github.com/ingest-dev/ingest/internal/httplimit"
)

func TestCappedFailsABodyReadByOthers(t *testing.T) {
	bomb := gzipbomb.New(nil, 1<<30)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/small" {
			_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
			return
		}
		bomb.Serve(w)
	}))
	defer srv.Close()
	client := &http.Client{Transport: httplimit.Capped(nil, 1000)}
	get := func(path string) ([]byte, error) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body) // as a library would
	}
	if b, err := get("/small"); err != nil || len(b) != 1000 {
		t.Errorf("a body at the cap: %d bytes, %v", len(b), err)
	}
	b, err := get("/bomb?token=secret")
	if !errors.Is(err, httplimit.ErrTooLarge) || len(b) != 1000 {
		t.Fatalf("a bomb: %d bytes, %v; want the cap's 1000 and ErrTooLarge", len(b), err)
	}
	if want := "GET " + srv.URL + "/bomb?token=xxxxx: answer larger than 1000 bytes (1000 B)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
