package habrfake

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ingest-dev/ingest/internal/fetch"
	"golang.org/x/net/html/charset"
)

const (
	articlePath  = "/ru/post/568382/"
	articleTitle = "Digital-мероприятия в Москве c 19 по 25 июля"
	renderedPath = "/ru/post/461617/"
)

func mustSetFault(t *testing.T, s *Server, path string, f Fault) {
	t.Helper()
	if err := s.SetFault(path, f); err != nil {
		t.Fatalf("SetFault(%s, %+v): %v", path, f, err)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		fault Fault
		check func(t *testing.T, r reply)
	}{
		{"404", articlePath, Fault{Kind: FaultStatus, Code: 404}, wantErrorScreen(404, "404", "Страница не найдена")},
		{"410", articlePath, Fault{Kind: FaultStatus, Code: 410}, wantErrorScreen(410, "410", "Страница удалена")},
		{"500", articlePath, Fault{Kind: FaultStatus, Code: 500}, wantProxyPage(500, "500 Internal Server Error")},
		{"502", articlePath, Fault{Kind: FaultStatus, Code: 502}, wantProxyPage(502, "502 Bad Gateway")},
		{"503", FeedArticles, Fault{Kind: FaultStatus, Code: 503}, wantProxyPage(503, "503 Service Unavailable")},
		{"301", articlePath, Fault{Kind: FaultRedirect, Code: 301, Location: "/ru/articles/568382/"}, wantRedirect(301, "/ru/articles/568382/")},
		{"302", articlePath, Fault{Kind: FaultRedirect, Code: 302, Location: "https://habr.com/ru/"}, wantRedirect(302, "https://habr.com/ru/")},
		{"deleted", articlePath, Fault{Kind: FaultDeleted}, wantErrorScreen(200, "403", "Доступ к публикации закрыт")},
		{"deleted with 404", renderedPath, Fault{Kind: FaultDeleted, Code: 404}, wantErrorScreen(404, "403", "Доступ к публикации закрыт")},
		{"listing", articlePath, Fault{Kind: FaultListing}, func(t *testing.T, r reply) {
			doc := parseHTML(t, r.body)
			if r.status != 200 || doc.Find("article.tm-articles-list__item").Length() != 20 || doc.Find("#post-content-body").Length() != 0 {
				t.Errorf("want a 200 listing of 20 snippets and no article body, got status %d", r.status)
			}
		}},
		{"windows-1251 page", articlePath, Fault{Kind: FaultWindows1251}, func(t *testing.T, r reply) {
			ct := r.header.Get("Content-Type")
			if r.status != 200 || ct != "text/html; charset=windows-1251" || utf8.Valid(r.body) {
				t.Fatalf("status %d, Content-Type %q, body valid UTF-8: %v", r.status, ct, utf8.Valid(r.body))
			}
			if !bytes.Contains(r.body[:200], []byte(`<meta charset="windows-1251">`)) {
				t.Errorf("the page still declares UTF-8: %q", r.body[:200])
			}
			decoded := decode(t, r.body, ct)
			if !strings.Contains(decoded, articleTitle) || !strings.Contains(decoded, "&#") {
				t.Errorf("decoded page lacks the title, or unencodable runes were dropped instead of escaped")
			}
		}},
		{"bad text", articlePath, Fault{Kind: FaultBadText}, func(t *testing.T, r reply) {
			if r.status != 200 || !bytes.Contains(r.body, []byte(BadText)) || bytes.Count(r.body, []byte{0}) != 1 {
				t.Errorf("status %d; want the page with BadText, its NUL once", r.status)
			}
		}},
		{"bad text rendered page", renderedPath, Fault{Kind: FaultBadText}, func(t *testing.T, r reply) {
			if !bytes.Contains(r.body, []byte(BadText)) {
				t.Error("no BadText in the rendered page")
			}
		}},
		{"windows-1251 rendered page", renderedPath, Fault{Kind: FaultWindows1251}, func(t *testing.T, r reply) {
			if !strings.Contains(decode(t, r.body, r.header.Get("Content-Type")), "Теория успешного стартапа") {
				t.Error("decoded page lacks the title")
			}
		}},
		{"malformed feed", FeedAll2019, Fault{Kind: FaultMalformedFeed}, func(t *testing.T, r reply) {
			var v any
			if r.status != 200 || !bytes.HasPrefix(r.body, []byte("<?xml")) {
				t.Fatalf("status %d, want a 200 that starts like a feed", r.status)
			}
			if err := xml.Unmarshal(r.body, &v); err == nil {
				t.Error("the malformed feed parses")
			}
		}},
		{"off-site item", FeedArticles, Fault{Kind: FaultOffSiteItem}, func(t *testing.T, r reply) {
			items := feedItems(t, r.body)
			for i, it := range items {
				u, err := url.Parse(it.Link)
				if err != nil {
					t.Fatal(err)
				}
				if wantHost := map[bool]string{true: "example.com", false: "habr.com"}[i == 0]; u.Host != wantHost {
					t.Errorf("item %d links to %s, want host %s", i, it.Link, wantHost)
				}
			}
		}},
	}
	s, base := Start(t, Options{Fixtures: fixtures})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustSetFault(t, s, tt.path, tt.fault)
			tt.check(t, get(t, base, tt.path))
			// Other paths are unaffected, and clearing restores the path.
			if r := get(t, base, "/post/1000/"); r.status != http.StatusOK {
				t.Errorf("an unfaulted path answers %d", r.status)
			}
			s.ClearFault(tt.path)
			if r := get(t, base, tt.path); r.status != http.StatusOK {
				t.Errorf("after ClearFault: status %d", r.status)
			}
		})
	}
}

func wantErrorScreen(status int, code, title string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		doc := parseHTML(t, r.body)
		if r.status != status {
			t.Errorf("status %d, want %d", r.status, status)
		}
		if got := doc.Find(".tm-error-message__code").Text(); got != code {
			t.Errorf("error code %q, want %q", got, code)
		}
		if got := doc.Find("h1.tm-error-message__title").Text(); got != title {
			t.Errorf("error title %q, want %q", got, title)
		}
		if doc.Find(".tm-error-message__body").Text() == "" || doc.Find("#post-content-body").Length() != 0 {
			t.Error("want an error body and no article body")
		}
	}
}

func wantProxyPage(status int, heading string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		if r.status != status || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("status %d, Content-Type %q", r.status, r.header.Get("Content-Type"))
		}
		if got := parseHTML(t, r.body).Find("h1").Text(); got != heading {
			t.Errorf("heading %q, want %q", got, heading)
		}
	}
}

func wantRedirect(status int, location string) func(*testing.T, reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		if r.status != status || r.header.Get("Location") != location {
			t.Errorf("got %d Location %q, want %d %q", r.status, r.header.Get("Location"), status, location)
		}
	}
}

func decode(t *testing.T, body []byte, contentType string) string {
	t.Helper()
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestTruncatedFaultCutsTheBody(t *testing.T) {
	s, base := Start(t, Options{Fixtures: fixtures})
	mustSetFault(t, s, articlePath, Fault{Kind: FaultTruncated})

	req, _ := http.NewRequest(http.MethodGet, base+articlePath, nil)
	req.Header.Set("Accept-Encoding", "gzip") // ignored: the cut is in plain bytes
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatalf("no response at all: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading the body: %v, want io.ErrUnexpectedEOF", err)
	}
	if resp.StatusCode != http.StatusOK || resp.ContentLength <= int64(len(body)) || len(body) == 0 {
		t.Errorf("status %d, promised %d bytes, got %d", resp.StatusCode, resp.ContentLength, len(body))
	}
}

func TestSlowFault(t *testing.T) {
	s, err := New(Options{Fixtures: fixtures})
	if err != nil {
		t.Fatal(err)
	}
	handlerDone := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r)
		handlerDone <- struct{}{}
	}))
	defer srv.Close()

	t.Run("answers normally after the delay", func(t *testing.T) {
		mustSetFault(t, s, articlePath, Fault{Kind: FaultSlow, Delay: time.Millisecond})
		if r := get(t, srv.URL, articlePath); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(articleTitle)) {
			t.Errorf("status %d", r.status)
		}
		<-handlerDone
	})

	t.Run("stops waiting when the client leaves", func(t *testing.T) {
		mustSetFault(t, s, articlePath, Fault{Kind: FaultSlow, Delay: time.Hour})
		client := &http.Client{Timeout: 50 * time.Millisecond}
		resp, err := client.Get(srv.URL + articlePath)
		if err == nil {
			resp.Body.Close()
			t.Fatal("a one-hour delay answered within the client timeout")
		}
		select {
		case <-handlerDone:
		case <-time.After(2 * time.Minute): // a bound for a hung handler, not a timing claim
			t.Fatal("the handler is still sleeping after its client left")
		}
	})
}

func TestFaultsFromOptions(t *testing.T) {
	_, base := Start(t, Options{Fixtures: fixtures, Faults: map[string]Fault{
		articlePath:  {Kind: FaultStatus, Code: 503},
		renderedPath: {Kind: FaultDeleted},
	}})
	if r := get(t, base, articlePath); r.status != http.StatusServiceUnavailable {
		t.Errorf("%s: status %d, want 503", articlePath, r.status)
	}
	if r := get(t, base, renderedPath); parseHTML(t, r.body).Find(".tm-error-message").Length() != 1 {
		t.Errorf("%s: not the deleted-publication screen", renderedPath)
	}

	_, err := New(Options{Fixtures: fixtures, Faults: map[string]Fault{articlePath: {Kind: FaultStatus, Code: 200}}})
	if err == nil {
		t.Error("New accepted a status fault with code 200")
	}
}

// The faults must land in the error classes the spec's extractor relies
// on: network errors (retry later) versus a page that loads but holds no
// article (structural, decided by the extractor).
func TestFaultsAsSeenByFetch(t *testing.T) {
	tests := []struct {
		name        string
		fault       Fault
		wantNetwork bool
		wantErr     error
	}{
		{"503", Fault{Kind: FaultStatus, Code: 503}, true, nil},
		{"410", Fault{Kind: FaultStatus, Code: 410}, true, nil},
		{"redirect", Fault{Kind: FaultRedirect, Code: 301, Location: "/ru/articles/568382/"}, true, nil},
		{"truncated", Fault{Kind: FaultTruncated}, true, fetch.ErrTruncated},
		{"slow", Fault{Kind: FaultSlow, Delay: time.Hour}, true, fetch.ErrTimeout},
		{"deleted stub", Fault{Kind: FaultDeleted}, false, nil},
		{"listing", Fault{Kind: FaultListing}, false, nil},
		{"windows-1251", Fault{Kind: FaultWindows1251}, false, nil},
	}
	s, base := Start(t, Options{Fixtures: fixtures})
	// Every answer is given time on a busy machine (the bound only ends a hang); the slow fault,
	// which never answers within the test, meets a client that gives up after a second.
	patient, err := fetch.New(fetch.Config{BaseURL: base, UserAgent: "ingest/test", Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	impatient, err := fetch.New(fetch.Config{BaseURL: base, UserAgent: "ingest/test", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := patient
			if tt.fault.Kind == FaultSlow {
				c = impatient
			}
			mustSetFault(t, s, articlePath, tt.fault)
			defer s.ClearFault(articlePath)
			before := s.Requests(articlePath)
			// Records keep real habr.com links; fetch maps them onto the fake.
			resp, err := c.Get(context.Background(), "https://habr.com"+articlePath+"?utm_source=habrahabr&utm_medium=rss&utm_campaign=568382")
			if got := fetch.IsNetwork(err); got != tt.wantNetwork {
				t.Fatalf("IsNetwork = %v (error %v), want %v", got, err, tt.wantNetwork)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if !tt.wantNetwork && (err != nil || !utf8.Valid(resp.Body)) {
				t.Errorf("want a UTF-8 page, got error %v", err)
			}
			if n := s.Requests(articlePath) - before; n != 1 {
				t.Errorf("fake saw %d requests, want 1", n)
			}
		})
	}
}

func TestParseFault(t *testing.T) {
	tests := []struct {
		in      string
		want    Fault
		wantErr bool
	}{
		{in: "503", want: Fault{Kind: FaultStatus, Code: 503}},
		{in: "404", want: Fault{Kind: FaultStatus, Code: 404}},
		{in: "301:/ru/articles/1/", want: Fault{Kind: FaultRedirect, Code: 301, Location: "/ru/articles/1/"}},
		{in: "302:https://habr.com/ru/", want: Fault{Kind: FaultRedirect, Code: 302, Location: "https://habr.com/ru/"}},
		{in: "slow", want: Fault{Kind: FaultSlow}},
		{in: "slow:90s", want: Fault{Kind: FaultSlow, Delay: 90 * time.Second}},
		{in: "deleted", want: Fault{Kind: FaultDeleted}},
		{in: "deleted:404", want: Fault{Kind: FaultDeleted, Code: 404}},
		{in: "truncated", want: Fault{Kind: FaultTruncated}},
		{in: "listing", want: Fault{Kind: FaultListing}},
		{in: "malformed-feed", want: Fault{Kind: FaultMalformedFeed}},
		{in: "offsite-item", want: Fault{Kind: FaultOffSiteItem}},
		{in: "windows-1251", want: Fault{Kind: FaultWindows1251}},
		{in: "bad-text", want: Fault{Kind: FaultBadText}},
		{in: "503x1", want: Fault{Kind: FaultStatus, Code: 503, Times: 1}},
		{in: "deleted:404x3", want: Fault{Kind: FaultDeleted, Code: 404, Times: 3}},
		{in: "503x0", wantErr: true},
		{in: "200", wantErr: true},
		{in: "301", wantErr: true},
		{in: "303:/x/", wantErr: true},
		{in: "slow:soon", wantErr: true},
		{in: "truncated:5", wantErr: true},
		{in: "deleted:abc", wantErr: true},
		{in: "explode", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseFault(tt.in)
		if (err != nil) != tt.wantErr || !tt.wantErr && got != tt.want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// A fault limited to N requests lets the path behave again after them.
func TestLimitedFaultRecovers(t *testing.T) {
	s, base := Start(t, Options{Fixtures: fixtures})
	const path = "/ru/articles/769102/"
	if err := s.SetFault(path, Fault{Kind: FaultStatus, Code: 503, Times: 2}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{503, 503, 200, 200} {
		if r := get(t, base, path); r.status != want {
			t.Errorf("request %d: status %d, want %d", i+1, r.status, want)
		}
	}
}
