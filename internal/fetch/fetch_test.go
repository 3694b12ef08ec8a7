package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testUserAgent = "ingest/test (+https://github.com/ingest-dev/ingest)"

// newClient builds a Client for srv; change adjusts the config first.
func newClient(t *testing.T, baseURL string, change func(*Config)) *Client {
	t.Helper()
	cfg := Config{BaseURL: baseURL, UserAgent: testUserAgent}
	if change != nil {
		change(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// recorder is a test server that remembers what it was asked for.
type recorder struct {
	mu       sync.Mutex
	requests []*http.Request
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.requests = append(rec.requests, r.Clone(context.Background()))
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, "<p>ok</p>")
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.requests)
}

func (rec *recorder) last() *http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.requests[len(rec.requests)-1]
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"empty base", Config{UserAgent: testUserAgent}},
		{"no scheme", Config{BaseURL: "habr.com", UserAgent: testUserAgent}},
		{"ftp", Config{BaseURL: "ftp://habr.com", UserAgent: testUserAgent}},
		{"path", Config{BaseURL: "https://habr.com/ru/", UserAgent: testUserAgent}},
		{"query", Config{BaseURL: "https://habr.com/?fl=ru", UserAgent: testUserAgent}},
		{"credentials", Config{BaseURL: "https://u:p@habr.com", UserAgent: testUserAgent}},
		{"no user agent", Config{BaseURL: "https://habr.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil {
				t.Fatalf("New(%+v) succeeded, want an error", tt.cfg)
			}
		})
	}
}

func TestGetMapsRefsOntoOrigin(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c := newClient(t, srv.URL, nil)

	tests := []struct {
		ref     string
		wantURI string
	}{
		{"/ru/post/568382/", "/ru/post/568382/"},
		{srv.URL + "/ru/rss/articles/?fl=ru", "/ru/rss/articles/?fl=ru"},
		{"https://habr.com/ru/post/461617/?utm_source=habrahabr&utm_medium=rss&utm_campaign=461617#habracut",
			"/ru/post/461617/?utm_source=habrahabr&utm_medium=rss&utm_campaign=461617"},
		{"http://habr.com/post/1000/", "/post/1000/"},
		{"https://www.habr.com/ru/articles/769102/", "/ru/articles/769102/"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			resp, err := c.Get(context.Background(), tt.ref)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if got := rec.last().URL.RequestURI(); got != tt.wantURI {
				t.Errorf("server saw %q, want %q", got, tt.wantURI)
			}
			if want := srv.URL + tt.wantURI; resp.URL != want {
				t.Errorf("Response.URL = %q, want %q", resp.URL, want)
			}
		})
	}
}

func TestGetRejectsOffOriginWithoutRequesting(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c := newClient(t, srv.URL, nil)

	refs := []string{
		"https://example.com/ru/post/1/",
		"https://habr.com.example.com/ru/post/1/",
		"//example.com/ru/post/1/",
		"ru/post/1/",
		"ftp://habr.com/ru/post/1/",
		"https://habr.com:8443/ru/post/1/",
		"https://user:hunter2@habr.com/ru/post/1/",
		strings.Replace(srv.URL, "http://", "https://", 1) + "/ru/post/1/",
	}
	for _, ref := range refs {
		t.Run(ref, func(t *testing.T) {
			_, err := c.Get(context.Background(), ref)
			if !errors.Is(err, ErrOffOrigin) {
				t.Fatalf("Get(%q) error = %v, want ErrOffOrigin", ref, err)
			}
			if IsNetwork(err) {
				t.Errorf("IsNetwork(%v) = true, want false", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks a password: %v", err)
			}
		})
	}
	if n := rec.count(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

func TestGetSendsIdentifyingHeaders(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()

	if _, err := newClient(t, srv.URL, nil).Get(context.Background(), "/"); err != nil {
		t.Fatalf("Get: %v", err)
	}
	r := rec.last()
	if got := r.UserAgent(); got != testUserAgent {
		t.Errorf("User-Agent = %q, want %q", got, testUserAgent)
	}
	if got := r.Header.Get("Accept-Encoding"); got != "gzip" {
		t.Errorf("Accept-Encoding = %q, want gzip", got)
	}
}

func TestGetDecodesGzip(t *testing.T) {
	page := strings.Repeat("<p>Привет, Хабр!</p>\n", 500)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipped(t, page))
	}))
	defer srv.Close()

	resp, err := newClient(t, srv.URL, nil).Get(context.Background(), "/ru/post/1/")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if string(resp.Body) != page {
		t.Errorf("body is %d bytes, want the %d-byte page", len(resp.Body), len(page))
	}
	if resp.StatusCode != http.StatusOK || resp.ContentType != "text/html; charset=UTF-8" {
		t.Errorf("status %d, content type %q", resp.StatusCode, resp.ContentType)
	}
}

func TestGetReusesConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing/" {
			http.Error(w, "<h1>Страница не найдена</h1>", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipped(t, "<p>ok</p>"))
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c := newClient(t, srv.URL, nil)
	for _, path := range []string{"/a/", "/missing/", "/b/", "/c/"} {
		_, _ = c.Get(context.Background(), path)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("opened %d connections for 4 sequential requests, want 1", n)
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := io.WriteString(zw, s); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitForCancel blocks a handler until its client gives up or the test ends.
func waitForCancel(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
	}
}
