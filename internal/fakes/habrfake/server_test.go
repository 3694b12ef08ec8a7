package habrfake

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	fixturespkg "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// fixtures is the embedded Habr collection the fake serves by default.
var fixtures = fixturespkg.Habr()

// reply is a response read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// get requests base+ref without following redirects or decoding gzip;
// headers are extra request headers as name, value pairs.
func get(t *testing.T, base, ref string, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", ref, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", ref, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// feedItems parses an RSS body.
func feedItems(t *testing.T, body []byte) []rssItem {
	t.Helper()
	var doc struct {
		Items []rssItem `xml:"channel>item"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("feed does not parse: %v", err)
	}
	return doc.Items
}

func parseHTML(t *testing.T, body []byte) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// Every item of every feed must lead to a page about that item.
func TestEveryFeedItemResolvesToItsPage(t *testing.T) {
	const extra = 12
	_, base := Start(t, Options{Fixtures: fixtures, ExtraArticles: extra})

	tests := []struct {
		feed      string
		wantItems int
		wantHost  string
	}{
		// 7 real pages + 20 API posts + 2 + 20 + 20 feed items + 12 extras,
		// less the 12/5 = 2 extras that are news.
		{FeedArticles + "?fl=ru,en&limit=1000", 7 + 20 + 2 + 20 + 20 + extra - extra/5, "habr.com"},
		{FeedNews + "?fl=ru", extra / 5, "habr.com"},
		// The English feeds: the one English article page (453232).
		{FeedArticlesEN + "?fl=en&limit=100", 1, "habr.com"},
		{FeedNewsEN + "?fl=en", 0, "habr.com"},
		{FeedAll2019, 20, "habr.com"},
		{FeedInteresting, 20, "habrahabr.ru"},
		{FeedMedsurg, 2, "habr.com"},
	}
	for _, tt := range tests {
		t.Run(tt.feed, func(t *testing.T) {
			r := get(t, base, tt.feed)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != feedContentType {
				t.Fatalf("status %d, Content-Type %q", r.status, r.header.Get("Content-Type"))
			}
			items := feedItems(t, r.body)
			if len(items) != tt.wantItems {
				t.Errorf("%d items, want %d", len(items), tt.wantItems)
			}
			for _, it := range items {
				link, err := url.Parse(strings.TrimSpace(it.Link))
				if err != nil {
					t.Fatal(err)
				}
				if link.Host != tt.wantHost || link.Query().Get("utm_source") != "habrahabr" || link.Query().Get("utm_medium") != "rss" {
					t.Errorf("item link %s: want host %s and Habr's utm parameters", it.Link, tt.wantHost)
				}
				page := get(t, base, link.RequestURI())
				if page.status != http.StatusOK {
					t.Errorf("%s: status %d", link.Path, page.status)
					continue
				}
				ogTitle, _ := parseHTML(t, page.body).Find(`meta[property="og:title"]`).Attr("content")
				if ogTitle != strings.TrimSpace(it.Title) {
					t.Errorf("%s: page og:title %q, want the item's title %q", link.Path, ogTitle, it.Title)
				}
			}
		})
	}
}

func TestRealPagesAreServedVerbatim(t *testing.T) {
	_, base := Start(t, Options{Fixtures: fixtures})
	for _, fp := range fixturePages {
		t.Run(fp.path, func(t *testing.T) {
			want, err := fs.ReadFile(fixtures, fp.file)
			if err != nil {
				t.Fatal(err)
			}
			r := get(t, base, fp.path)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/html; charset=UTF-8" {
				t.Errorf("status %d, Content-Type %q", r.status, r.header.Get("Content-Type"))
			}
			if !bytes.Equal(r.body, want) {
				t.Errorf("body differs from %s", fp.file)
			}
		})
	}
}

// A rendered page must carry its own article everywhere an extractor could
// look, and nothing of the template's article.
func TestRenderedPagesCarryTheirArticle(t *testing.T) {
	s, base := Start(t, Options{Fixtures: fixtures, ExtraArticles: 5})
	tests := []struct {
		name     string
		path     string
		wantText string // a piece of the body
	}{
		{"API post, editor v1", "/ru/company/ruvds/blog/572338/", "out-of-bounds memory access"},
		{"API post, editor v2", "/ru/post/572598/", "продать ручку"},
		{"2019 feed item", "/ru/post/461617/", "Напишу базис для любого стартапа"},
		{"2018 feed item", "/post/348200/", "Шон Пирс: настоящий лидер"},
		{"2026 feed item", "/ru/articles/1089530/", "В июле агенты OpenAI вышли из тестовой песочницы."},
		{"synthetic news", "/ru/news/1100005/", "Синтетическая публикация №5 по мотивам публикации"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := s.byPath[tt.path]
			if a == nil || a.page != nil {
				t.Fatalf("%s is not a rendered article", tt.path)
			}
			r := get(t, base, tt.path)
			if r.status != http.StatusOK {
				t.Fatalf("status %d", r.status)
			}
			for _, stale := range []string{tplID, tplAuthor, tplTitle, "__INITIAL_STATE__", "@@"} {
				if bytes.Contains(r.body, []byte(stale)) {
					t.Errorf("page contains %q", stale)
				}
			}
			doc := parseHTML(t, r.body)
			checks := []struct{ what, got, want string }{
				{"h1", doc.Find("h1.tm-article-snippet__title span").Text(), a.title},
				{"<title>", doc.Find("head > title").Text(), a.title + " / Хабр"},
				{"author", strings.TrimSpace(doc.Find("a.tm-user-info__username").Text()), a.author},
				{"time", doc.Find(".tm-article-snippet__datetime-published time").AttrOr("datetime", ""), a.published.UTC().Format("2006-01-02T15:04:05.000Z")},
				{"canonical", doc.Find(`link[rel="canonical"]`).AttrOr("href", ""), "https://habr.com" + a.path},
				{"item id", doc.Find(`meta[property="aiturec:item_id"]`).AttrOr("content", ""), strconv.Itoa(a.id)},
				{"body version", doc.Find("#post-content-body").AttrOr("class", ""), "article-formatted-body article-formatted-body_version-" + strconv.Itoa(a.editor)},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
			if body := doc.Find("#post-content-body").Text(); !strings.Contains(body, tt.wantText) {
				t.Errorf("#post-content-body does not contain %q", tt.wantText)
			}
			var ld struct {
				Headline      string `json:"headline"`
				DatePublished string `json:"datePublished"`
				Author        struct {
					Name string `json:"name"`
				} `json:"author"`
			}
			if err := json.Unmarshal([]byte(doc.Find(`script[type="application/ld+json"]`).Text()), &ld); err != nil {
				t.Fatalf("ld+json: %v", err)
			}
			published, err := time.Parse(time.RFC3339, ld.DatePublished)
			if ld.Headline != a.title || ld.Author.Name != a.author || err != nil || !published.Equal(a.published) {
				t.Errorf("ld+json = %+v, want the article's headline, author and date", ld)
			}
		})
	}
}

func TestOtherURLShapesRedirectToTheCanonicalPath(t *testing.T) {
	_, base := Start(t, Options{Fixtures: fixtures})
	tests := []struct{ path, want string }{
		{"/ru/articles/568382/", "/ru/post/568382/"},
		{"/ru/post/568382", "/ru/post/568382/"},
		{"/ru/companies/parallels/articles/462783/", "/ru/company/parallels/blog/462783/"},
		{"/ru/post/1000/", "/post/1000/"},
	}
	for _, tt := range tests {
		r := get(t, base, tt.path)
		if r.status != http.StatusMovedPermanently || r.header.Get("Location") != tt.want {
			t.Errorf("GET %s: %d Location %q, want 301 %s", tt.path, r.status, r.header.Get("Location"), tt.want)
		}
	}
}

func TestUnknownPathsGetHabrsNotFoundScreen(t *testing.T) {
	_, base := Start(t, Options{Fixtures: fixtures})
	for _, path := range []string{"/ru/post/999999999/", "/ru/rss/nope/", "/robots.txt"} {
		r := get(t, base, path)
		if r.status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, r.status)
		}
		doc := parseHTML(t, r.body)
		if got := doc.Find("h1.tm-error-message__title").Text(); got != "Страница не найдена" {
			t.Errorf("GET %s: error title %q", path, got)
		}
		if doc.Find("#post-content-body").Length() != 0 {
			t.Errorf("GET %s: the error page has an article body", path)
		}
	}
}

func TestGzipWhenAccepted(t *testing.T) {
	_, base := Start(t, Options{Fixtures: fixtures})
	for _, path := range []string{"/ru/post/568382/", "/ru/post/461617/", FeedAll2019, "/nope/"} {
		t.Run(path, func(t *testing.T) {
			plain := get(t, base, path)
			zipped := get(t, base, path, "Accept-Encoding", "gzip, deflate, br")
			refused := get(t, base, path, "Accept-Encoding", "gzip;q=0, identity")

			if plain.header.Get("Content-Encoding") != "" || refused.header.Get("Content-Encoding") != "" {
				t.Errorf("gzipped without being asked")
			}
			if zipped.header.Get("Content-Encoding") != "gzip" || zipped.header.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("Content-Encoding %q, Vary %q", zipped.header.Get("Content-Encoding"), zipped.header.Get("Vary"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(unzipped, plain.body) || len(zipped.body) >= len(plain.body) {
				t.Errorf("gzip body: %d bytes unzipping to %d, want %d", len(zipped.body), len(unzipped), len(plain.body))
			}
			if !strings.Contains(zipped.header.Get("Content-Type"), "charset=UTF-8") {
				t.Errorf("Content-Type %q has no charset", zipped.header.Get("Content-Type"))
			}
		})
	}
}

func TestRequestsAreCountedPerPath(t *testing.T) {
	s, base := Start(t, Options{Fixtures: fixtures})
	get(t, base, "/ru/post/568382/")
	get(t, base, "/ru/post/568382/?utm_source=habrahabr")
	get(t, base, FeedArticles+"?fl=ru")
	get(t, base, "/nope/")

	tests := []struct {
		path string
		want int
	}{
		{"/ru/post/568382/", 2},
		{FeedArticles, 1},
		{"/nope/", 1},
		{"/ru/post/461617/", 0},
	}
	for _, tt := range tests {
		if got := s.Requests(tt.path); got != tt.want {
			t.Errorf("Requests(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	if got := s.TotalRequests(); got != 4 {
		t.Errorf("TotalRequests() = %d, want 4", got)
	}
}

func TestGeneratedFeedQuery(t *testing.T) {
	_, base := Start(t, Options{Fixtures: fixtures})
	tests := []struct {
		query     string
		wantItems int
		wantFirst string // guid of the first item
	}{
		{"", defaultFeedLimit, "https://habr.com/ru/articles/1089530/"},
		{"?fl=ru&limit=5", 5, "https://habr.com/ru/articles/1089530/"},
		{"?limit=nonsense", defaultFeedLimit, "https://habr.com/ru/articles/1089530/"},
		{"?fl=en", 1, "https://habr.com/en/post/453232/"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			items := feedItems(t, get(t, base, FeedArticles+tt.query).body)
			if len(items) != tt.wantItems {
				t.Fatalf("%d items, want %d", len(items), tt.wantItems)
			}
			if items[0].GUID != tt.wantFirst {
				t.Errorf("first item %s, want %s", items[0].GUID, tt.wantFirst)
			}
			for i := 1; i < len(items); i++ {
				prev, _ := time.Parse(time.RFC1123, items[i-1].PubDate)
				cur, _ := time.Parse(time.RFC1123, items[i].PubDate)
				if cur.After(prev) {
					t.Errorf("item %d (%s) is newer than the one before it", i, items[i].PubDate)
				}
			}
		})
	}
}

func TestExtraArticlesAreDeterministic(t *testing.T) {
	const n = 30
	_, base1 := Start(t, Options{Fixtures: fixtures, ExtraArticles: n})
	_, base2 := Start(t, Options{Fixtures: fixtures, ExtraArticles: n})

	const feed = FeedArticles + "?limit=100000"
	first, second := get(t, base1, feed).body, get(t, base2, feed).body
	if !bytes.Equal(first, second) {
		t.Fatal("two servers with the same options serve different feeds")
	}

	seen := map[string]bool{}
	for _, it := range feedItems(t, first) {
		seen[it.GUID] = true
	}
	for _, it := range feedItems(t, get(t, base1, FeedNews+"?limit=100000").body) {
		seen[it.GUID] = true
	}
	for i := range n {
		id := extraFirstID + i
		path := "/ru/articles/" + strconv.Itoa(id) + "/"
		if (i+1)%extraNewsN == 0 {
			path = "/ru/news/" + strconv.Itoa(id) + "/"
		}
		if !seen["https://habr.com"+path] {
			t.Errorf("synthetic publication %s is in no feed", path)
		}
	}
}

// TestNewFixtures: without a directory the fake serves the embedded copies (bin/fakes runs from
// anywhere); a directory given is the one read, and one without the files is refused.
func TestNewFixtures(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatalf("New without fixtures: %v", err)
	}
	page, err := fs.ReadFile(fixtures, fixturePages[0].file)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, fixturePages[0].path, nil))
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), page) {
		t.Errorf("GET %s without fixtures: status %d, %d bytes; want 200 and the embedded page (%d bytes)",
			fixturePages[0].path, w.Code, w.Body.Len(), len(page))
	}
	if _, err := New(Options{Fixtures: os.DirFS(t.TempDir())}); err == nil {
		t.Error("New with an empty fixtures directory succeeded")
	}
}

// BenchmarkRenderedPage measures what the fake adds to a benchmark run
// against it: rendering and gzipping one templated article page.
func BenchmarkRenderedPage(b *testing.B) {
	s, err := New(Options{Fixtures: fixtures, ExtraArticles: 1})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/ru/articles/1100001/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}
