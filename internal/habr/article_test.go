package habr

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html/charset"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// articlePages are the article pages in fixtures/html, with the canonical
// URL the pipeline would pass and the metadata the page shows. Their
// Markdown is compared with testdata/golden/<file>.md.
var articlePages = []struct {
	file string
	url  string
	meta Article
}{
	{
		file: "habr-com-post-1000-legacy-2018.html",
		url:  "https://habr.com/post/1000/",
		meta: Article{
			Title: "Wikiasaria — комедия ошибок", Author: "Maxime",
			Hubs: []string{"Поисковые технологии"},
			Tags: []string{"Wiki", "Wikiasari", "поисковик", "Википедия"},
		},
	},
	{
		file: "habrahabr-ru-post-354052-legacy-2018.html",
		url:  "https://habr.com/post/354052/",
		meta: Article{
			Title:  "Настройка Let's Encrypt wildcard-сертификатов в CentOS 7 с валидацией через CloudFlare API",
			Author: "Nexon", AuthorName: "Руслан Азнабаев",
			Hubs: []string{"Серверное администрирование", "Настройка Linux", "Nginx"},
			Tags: []string{"ssl-сертификат", "letsencrypt", "certbot", "centos", "centos 7", "веб-сервер"},
		},
	},
	{
		file: "geektimes-ru-post-300211-legacy-2018.html",
		url:  "https://habr.com/post/300211/",
		meta: Article{
			Title: "Как создавать 3d модели с помощью Python", Author: "Alexandr2001", AuthorName: "Mars",
			Hubs: []string{"Программирование", "3D-принтеры"},
			Tags: []string{"python", "3d-моделирование"},
		},
	},
	{
		file: "habr-com-ru-company-parallels-blog-462783-legacy-2019.html",
		url:  "https://habr.com/ru/company/parallels/blog/462783/",
		meta: Article{
			Title: "Матрица: 20 лет спустя", Author: "SmirkinDA", AuthorName: "Дмитрий Смиркин",
			PublishedAt: time.Date(2019, 8, 6, 20, 33, 0, 0, time.UTC),
			Hubs:        []string{"Читальный зал", "Киберпанк"},
			Company:     Company{Alias: "parallels", Name: "Блог компании Parallels"},
			Tags:        []string{"parallels", "martix", "history", "movie"},
		},
	},
	{
		file: "habr-com-ru-company-parallels-blog-462783-legacy-2019-en-ui.html",
		url:  "https://habr.com/ru/company/parallels/blog/462783/",
		meta: Article{
			Title: "Матрица: 20 лет спустя", Author: "SmirkinDA", AuthorName: "Дмитрий Смиркин",
			PublishedAt: time.Date(2019, 8, 6, 20, 33, 0, 0, time.UTC),
			Hubs:        []string{"Reading room", "Cyberpunk"},
			Company:     Company{Alias: "parallels", Name: "Parallels corporate blog"},
			Tags:        []string{"parallels", "martix", "history", "movie"},
		},
	},
	{
		// m.habr.com shows only "yesterday at 23:33": no publication time.
		file: "m-habr-com-company-parallels-blog-462783-mobile-spa-2019.html",
		url:  "https://habr.com/ru/company/parallels/blog/462783/",
		meta: Article{
			Title: "Матрица: 20 лет спустя", Author: "SmirkinDA", AuthorName: "Дмитрий Смиркин",
			Hubs:    []string{"Reading room", "Cyberpunk"},
			Company: Company{Alias: "parallels", Name: "Parallels corporate blog"},
			Tags:    []string{"parallels", "martix", "history", "movie"},
		},
	},
	{
		file: "habr-com-ru-post-568382-spa-2021-v2.39.html",
		url:  "https://habr.com/ru/post/568382/",
		meta: Article{
			Title: "Digital-мероприятия в Москве c 19 по 25 июля", Author: "rvnikita",
			PublishedAt: time.Date(2021, 7, 19, 7, 2, 37, 0, time.UTC),
			Hubs:        []string{"Хакатоны", "Конференции"},
			Tags: []string{"ивенты", "конференции", "митапы", "meetup", "conference", "event", "events",
				"marketing", "конференция", "митап", "хакатон", "хакатоны."},
		},
	},
	{
		file: "habr-com-en-post-453232-spa-v1-saved-page.md.html",
		url:  "https://habr.com/en/post/453232/",
		meta: Article{
			Title: "Writing billion songs with C# and Deep Learning", Author: "lostmsu",
			PublishedAt: time.Date(2019, 5, 23, 22, 14, 2, 0, time.UTC),
			Hubs:        []string{".NET", "Машинное обучение", "Искусственный интеллект", "Будущее здесь"},
			Tags:        []string{".net", "tensorflow", "asp.net core", "artificial intelligence", "art", "generative art"},
		},
	},
	{
		file: "habr-com-ru-articles-769102-spa-2025-v2.263.html",
		url:  "https://habr.com/ru/articles/769102/",
		meta: Article{
			Title: "Распределённые транзакции", Author: "panyukovnikolay",
			PublishedAt: time.Date(2023, 10, 22, 11, 31, 4, 0, time.UTC),
			Hubs:        []string{"Java", "Распределённые системы", "Микросервисы"},
			Tags: []string{"java", "распределенные системы", "микросервисы", "saga", "паттерны", "2pc",
				"оркестрация", "хореография", "архитектура", "распределенные транзакции"},
			Translation: Translation{
				OriginalAuthor: "Bilgin Ibryam",
				OriginalURL:    "https://developers.redhat.com/articles/2021/09/21/distributed-transaction-patterns-microservices-compared",
			},
		},
	},
}

// syntheticPages are pages of the project's own (testdata/pages), built from real editor-v2
// markup for constructs no real fixture page has; see testdata/pages/README.md.
var syntheticPages = []struct {
	file string
	url  string
	meta Article
}{
	{
		file: "synthetic-2025-every-class.html",
		url:  "https://habr.com/ru/companies/habr/articles/900001/",
		meta: Article{
			Title: "Синтетическая статья: каждая конструкция редактора", Author: "synthetic_author", AuthorName: "Иван Петров",
			PublishedAt: time.Date(2025, 9, 30, 9, 15, 0, 0, time.UTC),
			Hubs:        []string{"Java", "Распределённые системы", "Микросервисы"},
			Tags: []string{"java", "распределенные системы", "микросервисы", "saga", "паттерны", "2pc",
				"оркестрация", "хореография", "архитектура", "распределенные транзакции"},
			Company:     Company{Alias: "habr", Name: "Блог компании Хабр"},
			Translation: Translation{OriginalAuthor: "Jane Q. Writer", OriginalURL: "https://example.org/blog/every-construct?ref=habr"},
		},
	},
	{
		// Issue 25: a poll in the body container, embeds with parameters, pipes in link URLs in
		// cells, entity text, inline code with line breaks.
		file: "synthetic-2025-issue25.html",
		url:  "https://habr.com/ru/articles/900002/",
		meta: Article{
			Title: "Синтетическая статья: опрос, встраивания, ссылки в таблицах, сущности и код с переносами", Author: "synthetic_author",
			PublishedAt: time.Date(2025, 10, 1, 8, 0, 0, 0, time.UTC),
			Hubs:        []string{"Java", "Распределённые системы", "Микросервисы"},
			Tags: []string{"java", "распределенные системы", "микросервисы", "saga", "паттерны", "2pc",
				"оркестрация", "хореография", "архитектура", "распределенные транзакции"},
		},
	},
	{
		// News, found by the default news feeds, in Russian and in English.
		file: "news-ru-2025.html",
		url:  "https://habr.com/ru/news/900003/",
		meta: Article{
			Title: "Вышла новая версия СУБД с асинхронным вводом-выводом", Author: "synthetic_author",
			PublishedAt: time.Date(2025, 10, 2, 7, 30, 0, 0, time.UTC),
			Hubs:        []string{"PostgreSQL", "Open source"},
			Tags:        []string{"postgresql", "субд", "релиз"},
		},
	},
	{
		file: "news-en-2025.html",
		url:  "https://habr.com/en/news/900004/",
		meta: Article{
			Title: "A new database release brings asynchronous I/O", Author: "synthetic_author",
			PublishedAt: time.Date(2025, 10, 2, 9, 0, 0, 0, time.UTC),
			Hubs:        []string{"PostgreSQL", "Open source"},
			Tags:        []string{"postgresql", "database", "release"},
		},
	},
}

// listingPages are the non-article pages in fixtures/html.
var listingPages = []string{
	"listing-habr-com-ru-all-spa-2021-v2.39.html",
	"listing-habr-com-ru-hubs-java-spa-2025-v2.280.html",
}

func readFixture(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := fs.ReadFile(fixtures, path.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGolden compares got with testdata/golden/name, or rewrites the file
// when the test runs with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("markdown differs from %s (run go test -update and review the diff):\n%s", path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d\nwant: %q\n got: %q", i+1, wl, gl)
		}
	}
	return "(only line endings differ)"
}

// leaks are strings from the page around the body, or from markup the
// cleanup must rewrite, that must never reach the Markdown.
var leaks = []string{
	"/r/w780", "/r/w1560", "data-src", "px.gif", "hljs", "habracut",
	"<script", "mediator", "](/", "<iframe", "spoiler_title", "tm-",
	"Добавить метки", "Метки:", "Теги:", "Хабы:", "Tags:", "Только зарегистрированные пользователи",
	"Комментарии", "Поделиться", "Читать далее",
}

func TestExtractGolden(t *testing.T) {
	e := NewExtractor() // one converter for all pages, as in a run
	pages := append(articlePages[:len(articlePages):len(articlePages)], syntheticPages...)
	for _, p := range pages {
		t.Run(p.file, func(t *testing.T) {
			page, err := fs.ReadFile(fixtures, path.Join("html", p.file))
			if errors.Is(err, os.ErrNotExist) {
				page, err = os.ReadFile(filepath.Join("testdata", "pages", p.file))
			}
			if err != nil {
				t.Fatal(err)
			}
			a, err := e.Extract(p.url, page)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(p.file, ".html")+".md", a.Markdown)

			md := a.Markdown
			a.Markdown = ""
			if !reflect.DeepEqual(a, p.meta) {
				t.Errorf("metadata\n got %+v\nwant %+v", a, p.meta)
			}
			for _, leak := range leaks {
				if strings.Contains(md, leak) {
					t.Errorf("markdown contains %q", leak)
				}
			}
			checkAbsoluteURLs(t, md)
		})
	}
}

// checkAbsoluteURLs fails on a Markdown link or image whose URL is relative
// or points at a browser's local "_files/" copy; a fragment link must point
// at an anchor the Markdown has.
func checkAbsoluteURLs(t *testing.T, md string) {
	t.Helper()
	for rest := md; ; {
		i := strings.Index(rest, "](")
		if i < 0 {
			return
		}
		rest = rest[i+2:]
		u, _, _ := strings.Cut(rest, ")")
		if frag, ok := strings.CutPrefix(u, "#"); ok {
			if !strings.Contains(md, `<a id="`+frag+`"></a>`) {
				t.Errorf("link to #%s, which the Markdown has no anchor for", frag)
			}
			continue
		}
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "mailto:") ||
			strings.Contains(u, "_files/") && !strings.Contains(u, "/upload_files/") {
			t.Errorf("link or image with URL %q", u)
		}
	}
}

// The same article in the 2019 desktop layout, with the Russian and the
// English interface, and on m.habr.com has the same body. Its poll follows
// in the interface's language, with the votes per answer only where the
// page shows them (m.habr.com).
func TestExtractSameArticleAcrossLayouts(t *testing.T) {
	e := NewExtractor()
	var first string
	for _, file := range []string{
		"habr-com-ru-company-parallels-blog-462783-legacy-2019.html",
		"habr-com-ru-company-parallels-blog-462783-legacy-2019-en-ui.html",
		"m-habr-com-company-parallels-blog-462783-mobile-spa-2019.html",
	} {
		a, err := e.Extract("https://habr.com/ru/company/parallels/blog/462783/", readFixture(t, "html", file))
		if err != nil {
			t.Fatal(err)
		}
		body, _, ok := strings.Cut(a.Markdown, "**Если бы Морфеус")
		if !ok {
			t.Fatalf("%s: no poll", file)
		}
		if first == "" {
			first = body
			continue
		}
		if body != first {
			t.Errorf("%s: body differs from the desktop page:\n%s", file, firstDiff(first, body))
		}
	}
}

func TestExtractListingPages(t *testing.T) {
	e := NewExtractor()
	for _, file := range listingPages {
		_, err := e.Extract("https://habr.com/ru/all/", readFixture(t, "html", file))
		var se *StructureError
		if !errors.As(err, &se) || !errors.Is(err, ErrStructure) {
			t.Fatalf("%s: err = %v, want a structure error", file, err)
		}
		if want := "a listing page with 20 article previews instead of an article"; se.Reason != want {
			t.Errorf("%s: reason %q, want %q", file, se.Reason, want)
		}
	}
}

// Every page in fixtures/html and testdata/pages is covered by one of the tests above.
func TestEveryHTMLFixtureIsTested(t *testing.T) {
	files, err := fs.Glob(fixtures, "html/*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures found: %v", err)
	}
	ours, err := filepath.Glob(filepath.Join("testdata", "pages", "*.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ours {
		if !slices.ContainsFunc(syntheticPages, func(p struct {
			file string
			url  string
			meta Article
		}) bool {
			return p.file == filepath.Base(f)
		}) {
			t.Errorf("page %s has no golden test", f)
		}
	}
	for _, f := range files {
		name := filepath.Base(f)
		known := slices.Contains(listingPages, name) || slices.ContainsFunc(articlePages, func(p struct {
			file string
			url  string
			meta Article
		}) bool {
			return p.file == name
		})
		if !known {
			t.Errorf("fixture %s has no golden test", name)
		}
	}
}

// editorV2Posts are posts from the API fixture whose editor-v2 markup the
// saved pages lack: details spoilers and JSON code (572370), an embedded
// video and strikethrough (572560), a table with paragraphs and rowspan
// (572550), captioned figures and several videos (572576), a table of
// contents linking to anchors before headings, 53 figures, quotes and
// spoilers (572234), quotes and ordered lists (572564), and an editor-v1
// body of <br>-separated text with subscripts (572570).
var editorV2Posts = []int64{572370, 572560, 572550, 572576, 572234, 572564, 572570}

// apiPosts returns the text_html of every post in the API fixture by id.
func apiPosts(t testing.TB) map[int64]string {
	t.Helper()
	var resp struct {
		Data []struct {
			ID       int64  `json:"id"`
			TextHTML string `json:"text_html"`
		} `json:"data"`
	}
	if err := json.Unmarshal(readFixture(t, "api", "api-v1-posts-all-page1-2021-08.json"), &resp); err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, p := range resp.Data {
		out[p.ID] = p.TextHTML
	}
	return out
}

// apiPostPage is the page of an API post: its body in a minimal editor-v2 page.
func apiPostPage(t testing.TB, posts map[int64]string, id int64) []byte {
	t.Helper()
	body, ok := posts[id]
	if !ok {
		t.Fatalf("post %d not in the API fixture", id)
	}
	return inPage(body)
}

func TestExtractEditorV2Golden(t *testing.T) {
	posts := apiPosts(t)
	e := NewExtractor()
	for _, id := range editorV2Posts {
		t.Run(fmt.Sprint(id), func(t *testing.T) {
			a, err := e.Extract(fmt.Sprintf("https://habr.com/ru/post/%d/", id), apiPostPage(t, posts, id))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, fmt.Sprintf("api-v1-post-%d.md", id), a.Markdown)
			for _, leak := range []string{"<iframe", "<figure", "<figcaption", "spoiler__content", "data-colwidth", "](/"} {
				if strings.Contains(a.Markdown, leak) {
					t.Errorf("markdown contains %q", leak)
				}
			}
		})
	}
}

// goldenPage is a source page with a golden Markdown file.
type goldenPage struct {
	golden string // file name in testdata/golden
	url    string
	page   []byte
}

// goldenPages lists every page that has a golden file: the real article pages, the API posts
// and the synthetic pages of testdata/pages.
func goldenPages(t testing.TB) []goldenPage {
	t.Helper()
	var out []goldenPage
	for _, p := range articlePages {
		out = append(out, goldenPage{strings.TrimSuffix(p.file, ".html") + ".md", p.url, readFixture(t, "html", p.file)})
	}
	posts := apiPosts(t)
	for _, id := range editorV2Posts {
		out = append(out, goldenPage{fmt.Sprintf("api-v1-post-%d.md", id), fmt.Sprintf("https://habr.com/ru/post/%d/", id), apiPostPage(t, posts, id)})
	}
	for _, p := range syntheticPages {
		page, err := os.ReadFile(filepath.Join("testdata", "pages", p.file))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, goldenPage{strings.TrimSuffix(p.file, ".html") + ".md", p.url, page})
	}
	return out
}

// readGolden returns a golden file.
func readGolden(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExtractStructureErrors(t *testing.T) {
	page := func(body string) []byte {
		return []byte(`<!DOCTYPE html><html><head><title>Хабр</title></head><body><div class="tm-layout">` + body + `</div></body></html>`)
	}
	tests := []struct {
		name   string
		page   []byte
		reason string
	}{
		{"png image", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "not an HTML page: content is image/png"},
		{"json", []byte(`{"id": 1, "title": "Хабр"}`), "not an HTML page: no markup"},
		{"empty", nil, "not an HTML page: no markup"},
		{"too deep", []byte(strings.Repeat("<div>", 600) + "x"), "HTML cannot be parsed: html: open stack of elements exceeds 512 nodes"},
		{"unknown layout", page(`<main><p>Статья</p></main>`),
			"body container missing (looked for #post-content-body, .post_full .post__text, .tm-article-body_formatted)"},
		{"empty body", page(`<div id="post-content-body"><div class="article-formatted-body"> <br> <p> </p></div></div>`),
			"body container #post-content-body is empty"},
		{"listing", page(`<div class="tm-articles-list"><article class="tm-articles-list__item">a</article><article class="tm-articles-list__item">b</article></div>`),
			"a listing page with 2 article previews instead of an article"},
		{"legacy listing", page(`<ul class="content-list"><li><article class="post post_preview"><div class="post__text">a</div></article></li></ul>`),
			"a listing page with 1 article previews instead of an article"},
		{"rss feed", []byte(`<?xml version="1.0"?><rss version="2.0"><channel><item><title>x</title></item></channel></rss>`),
			"an RSS or Atom feed instead of an article"},
		{"deleted", page(`<div class="tm-error-message"><div class="tm-error-message__code">404</div>` +
			`<h1 class="tm-error-message__title">Страница не найдена</h1><div class="tm-error-message__body"><p>Страница устарела, была удалена или не существовала вовсе</p></div></div>`),
			`stub of a deleted or missing publication (error 404: "Страница не найдена")`},
		{"deleted, with recommendations", page(`<div class="tm-error-message"><div class="tm-error-message__code">404</div>` +
			`<h1 class="tm-error-message__title">Страница не найдена</h1></div>` +
			`<div class="tm-articles-list"><article class="tm-articles-list__item">a</article></div>`),
			`stub of a deleted or missing publication (error 404: "Страница не найдена")`},
		{"hidden", page(`<div class="tm-error-message"><div class="tm-error-message__code">403</div>` +
			`<h1 class="tm-error-message__title">Доступ к публикации закрыт</h1><div class="tm-error-message__body"><p>Автор или модераторы перенесли публикацию в черновики</p></div></div>`),
			`stub of a hidden publication (error 403: "Доступ к публикации закрыт")`},
		{"moderation", page(`<div class="tm-error-message"><div class="tm-error-message__code">403</div>` +
			`<h1 class="tm-error-message__title">Доступ к публикации закрыт</h1><div class="tm-error-message__body"><p>Публикация находится на модерации</p></div></div>`),
			`stub of a publication on moderation (error 403: "Доступ к публикации закрыт")`},
		{"hidden, English", page(`<div class="tm-error-message"><div class="tm-error-message__code">403</div>` +
			`<h1 class="tm-error-message__title">Access to this post is restricted</h1></div>`),
			`stub of a hidden publication (error 403: "Access to this post is restricted")`},
		{"access denied", page(`<div class="tm-error-message"><div class="tm-error-message__code">403</div><h1 class="tm-error-message__title">Доступ закрыт</h1></div>`),
			`stub of a publication closed to this reader (error 403: "Доступ закрыт")`},
		{"paywall", page(`<div class="tm-error-message"><div class="tm-error-message__code">402</div><h1 class="tm-error-message__title">Only for subscribers</h1></div>`),
			`stub of a paywalled publication (error 402: "Only for subscribers")`},
		{"internal error", page(`<div class="tm-error-message"><div class="tm-error-message__code">500</div><h1 class="tm-error-message__title">Internal error</h1></div>`),
			`stub of an error page (error 500: "Internal error")`},
		{"region", page(`<div class="tm-regional-restriction"><div class="tm-regional-restriction__title">Публикация недоступна в вашем регионе</div></div>`),
			`stub of a region-restricted publication ("Публикация недоступна в вашем регионе")`},
		{"legacy hidden", page(`<div id="reg-wrapper"><h1>Доступ к публикации закрыт</h1><p>Автор переместил топик в черновики.</p></div>`),
			`stub of a hidden publication ("Доступ к публикации закрыт")`},
	}
	e := NewExtractor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := e.Extract("https://habr.com/ru/articles/1/", tt.page)
			if !errors.Is(err, ErrStructure) {
				t.Fatalf("err = %v (markdown %q), want a structure error", err, a.Markdown)
			}
			var se *StructureError
			if !errors.As(err, &se) || se.Reason != tt.reason {
				t.Fatalf("reason = %q, want %q", se.Reason, tt.reason)
			}
			if want := "no article in page: " + tt.reason; err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
		})
	}
}

func TestExtractCharset(t *testing.T) {
	enc, _ := charset.Lookup("windows-1251")
	body := `<div id="post-content-body"><p>Привет, Хабр!</p></div>`
	want := "Привет, Хабр!\n"

	withMeta, err := enc.NewEncoder().String(`<html><head><meta charset="windows-1251"></head><body>` + body + `</body></html>`)
	if err != nil {
		t.Fatal(err)
	}
	withoutMeta, err := enc.NewEncoder().String(`<html><body>` + body + `</body></html>`)
	if err != nil {
		t.Fatal(err)
	}

	e := NewExtractor()
	a, err := e.Extract("https://habr.com/ru/post/1/", []byte(withMeta))
	if err != nil || a.Markdown != want {
		t.Errorf("meta charset: %q, %v; want %q", a.Markdown, err, want)
	}
	a, err = e.ExtractReader("https://habr.com/ru/post/1/", "text/html; charset=windows-1251", strings.NewReader(withoutMeta))
	if err != nil || a.Markdown != want {
		t.Errorf("header charset: %q, %v; want %q", a.Markdown, err, want)
	}
	// UTF-8 passes through even when the header claims otherwise.
	a, err = e.ExtractReader("https://habr.com/ru/post/1/", "text/html; charset=windows-1251", strings.NewReader(body))
	if err != nil || a.Markdown != want {
		t.Errorf("utf-8 page: %q, %v; want %q", a.Markdown, err, want)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestExtractReaderError(t *testing.T) {
	_, err := NewExtractor().ExtractReader("https://habr.com/ru/post/1/", "text/html", failingReader{})
	if err == nil || errors.Is(err, ErrStructure) || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("err = %v, want the read error, not a structure error", err)
	}
}

// One Extractor serves concurrent callers (run with -race).
func TestExtractConcurrent(t *testing.T) {
	e := NewExtractor()
	pages := [][]byte{
		readFixture(t, "html", "habr-com-ru-post-568382-spa-2021-v2.39.html"),
		readFixture(t, "html", "habr-com-post-1000-legacy-2018.html"),
	}
	want := make([]string, len(pages))
	for i, p := range pages {
		a, err := e.Extract("https://habr.com/ru/post/1/", p)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = a.Markdown
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := g % len(pages)
			a, err := e.Extract("https://habr.com/ru/post/1/", bytes.Clone(pages[i]))
			if err != nil || a.Markdown != want[i] {
				t.Errorf("goroutine %d: err %v, markdown differs: %v", g, err, a.Markdown != want[i])
			}
		}()
	}
	wg.Wait()
}

func FuzzExtract(f *testing.F) {
	f.Add(inPage(`<h2>T</h2><p>a <b>b</b> <a href="/x">c</a></p><ul><li>d<ol><li>e</li></ol></li></ul>`))
	f.Add(inPage(`<div class="spoiler"><b class="spoiler_title">s</b><div class="spoiler_text"><pre><code class="go hljs">x</code></pre></div></div>`))
	f.Add(inPage(`<details class="spoiler"><summary>s</summary><div class="spoiler__content"><table><tr><td><p>a</p><p>b</p></td></tr></table></div></details>`))
	f.Add(inPage(`<p><img class="formula inline" source="x^2"/><math><img data-tex="display" alt="$y$"/></math><iframe src="//www.youtube.com/embed/a"></iframe></p>`))
	f.Add(inPage(`<figure><img src="/r/w780q1/a.png" data-src="b_files/gr_3kn9i3dfajdbkguvqssgah6w.png"><figcaption>c</figcaption></figure><sup>1</sup>`))
	f.Add([]byte(`<div class="tm-error-message"><div class="tm-error-message__code">404</div></div>`))
	f.Add([]byte(`<div class="post_full"><div class="post__text">a<br/><br/>b<a name="habracut"></a></div></div>`))
	f.Add(inPage(`<p>&amp;mdash; <code>a<br>b<br></code></p><table><tr><td><a href="https://x/?q=a|b" title="&amp;lt;">l</a></td></tr></table>` +
		`<div class="oembed"><iframe src="//www.youtube.com/embed/a?start=9&amp;rel=0#t"></iframe></div><embed src="http://www.youtube.com/v/b&amp;start=3">` +
		`<script src="https://gist.github.com/u/1.js?file=a_b.go"></script><div class="tm-article-poll"><div class="tm-article-poll__answer">` +
		`<span class="tm-article-poll__answer-percent">1%</span><span class="tm-article-poll__answer-label">x</span></div></div>`))
	e := NewExtractor()
	f.Fuzz(func(t *testing.T, page []byte) {
		a, err := e.Extract("https://habr.com/ru/articles/1/", page)
		if err != nil {
			var se *StructureError
			if errors.As(err, &se) && se.Reason == "" {
				t.Errorf("structure error without a reason")
			}
			return
		}
		if strings.TrimSpace(a.Markdown) == "" || !strings.HasSuffix(a.Markdown, "\n") {
			t.Errorf("markdown %q: want non-empty text ending in a newline", a.Markdown)
		}
	})
}
