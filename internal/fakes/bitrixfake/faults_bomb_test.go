package bitrixfake

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestServeGzipBombs(t *testing.T) {
	p := New(Options{Users: 3, Seed: 1})
	srv := httptest.NewServer(p)
	defer srv.Close()
	bomb := p.ServeGzipBombs("user.get", 8<<20)
	post := func(method string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+p.WebhookPath()+method+".json", strings.NewReader(`{}`))
		req.Header.Set("Accept-Encoding", "gzip") // keep the transport from inflating it
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("user.get")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("HTTP %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	inflated, err := io.Copy(io.Discard, zr)
	if err != nil || inflated != 8<<20+int64(len(`{"result":"`)) {
		t.Errorf("inflated %d bytes (%v), want 8 MiB and the envelope's opening", inflated, err)
	}
	if bomb.Written() != bomb.Compressed() || bomb.Compressed() > 64<<10 {
		t.Errorf("sent %d of %d bytes", bomb.Written(), bomb.Compressed())
	}
	other := post("sonet_group.get")
	defer other.Body.Close()
	if body, _ := io.ReadAll(other.Body); other.Header.Get("Content-Encoding") == "gzip" || !strings.Contains(string(body), `"result"`) {
		t.Errorf("another method got %q (%s)", body, other.Header.Get("Content-Encoding"))
	}
	if p.Stats().Faults != 1 {
		t.Errorf("faults %d, want 1", p.Stats().Faults)
	}
}
