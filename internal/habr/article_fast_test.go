package habr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The fast path must give exactly what the whole-page parse gives, and it
// must be the one taken for every real article page.
func TestExtractFastMatchesWholePage(t *testing.T) {
	e := NewExtractor()
	for _, g := range goldenPages(t) {
		if strings.HasPrefix(g.golden, "api-v1-post-") {
			continue // a minimal page without the metadata the fast path wants
		}
		p := struct{ file, url string }{g.golden, g.url}
		t.Run(p.file, func(t *testing.T) {
			page := g.page
			whole, err := e.extractWholePage(p.url, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, checkUTF8 := range []bool{true, false} {
				fast, ok := e.extractFast(p.url, page, checkUTF8)
				if !ok {
					t.Fatalf("fast path (checkUTF8 %v) declined a real article page", checkUTF8)
				}
				if !reflect.DeepEqual(fast, whole) {
					t.Errorf("fast path (checkUTF8 %v) differs from the whole page:\nfast  %+v\nwhole %+v\n%s",
						checkUTF8, meta(fast), meta(whole), firstDiff(whole.Markdown, fast.Markdown))
				}
			}
		})
	}
}

func meta(a Article) Article {
	a.Markdown = ""
	return a
}

// fastPage is an article page the fast path can read; each case below
// breaks it in one way.
const fastPage = `<!DOCTYPE html><html><head><meta property="og:title" content="OG">` +
	`<meta property="aiturec:datetime" content="2023-10-22T11:31:04.000Z"></head><body>` +
	`%s<main><article class="tm-article-presenter__content">` +
	`<div class="tm-article-presenter__header"><a class="tm-user-info__username" href="/u/">someone</a></div>` +
	`<h1 class="tm-title"><span>%s</span></h1><a class="tm-publication-hub__link" href="/h/"><span>Go</span></a>` +
	`<div id="post-content-body"><p>Текст</p></div></article></main>` +
	`<section class="comments"><article class="comment">a comment</article></section></body></html>`

func TestExtractFastFallback(t *testing.T) {
	whole := Article{
		Title: "Title", Author: "someone", Hubs: []string{"Go"},
		PublishedAt: time.Date(2023, 10, 22, 11, 31, 4, 0, time.UTC), Markdown: "Текст\n",
	}
	tests := []struct {
		name     string
		before   string // markup before the <main>
		title    string
		fast     bool
		wantMeta Article
	}{
		{"plain", ``, "Title", true, whole},
		{"article in a comment", `<!-- <article><div id="post-content-body">x</div></article> -->`, "Title", true, whole},
		{"article in a script", `<script>var s = "<article>";</script>`, "Title", true, whole},
		{"article in an attribute", `<a title='<article>' href="/">x</a>`, "Title", true, whole},
		// A script that hides its end tag: the scanner gives up.
		{"escaped script", `<script><!-- <script></script> --></script>`, "Title", false, whole},
		// Inside <svg> a <style> is no raw text: its tags would count.
		{"svg with tags in a style", `<svg><style><b>a</b></style></svg>`, "Title", false, whole},
		{"svg with a title", `<svg><title>Хабр</title></svg>`, "Title", true, whole},
		// No title in the article: both read og:title from the head.
		{"title from og:title", ``, "", true, Article{
			Title: "OG", Author: "someone", Hubs: []string{"Go"}, PublishedAt: whole.PublishedAt, Markdown: "Текст\n",
		}},
		// An article inside the article: the first </article> is not its end.
		{"nested article", `<article class="preview">`, "Title", false, whole},
	}
	e := NewExtractor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := []byte(strings.Replace(strings.Replace(fastPage, "%s", tt.before, 1), "%s", tt.title, 1))
			if _, ok := e.extractFast("https://habr.com/ru/articles/1/", page, true); ok != tt.fast {
				t.Errorf("fast path taken: %v, want %v", ok, tt.fast)
			}
			a, err := e.Extract("https://habr.com/ru/articles/1/", page)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, tt.wantMeta) {
				t.Errorf("got %+v\nwant %+v", a, tt.wantMeta)
			}
		})
	}
}

// Pages without an article take the whole-page path, which says why.
func TestExtractFastDeclinesListings(t *testing.T) {
	e := NewExtractor()
	for _, file := range listingPages {
		page := readFixture(t, "html", file)
		if _, ok := e.extractFast("https://habr.com/ru/all/", page, true); ok {
			t.Errorf("%s: fast path took a listing", file)
		}
		if _, err := e.Extract("https://habr.com/ru/all/", page); !errors.Is(err, ErrStructure) {
			t.Errorf("%s: err = %v, want a structure error", file, err)
		}
	}
}

// A UTF-8 page with a bad byte reads as the whole-page path reads the decoded page (the byte
// replaced by U+FFFD), whether the byte is outside what the fast path parses (then it does not
// check the whole page) or inside it (then it declines the raw page and reads the decoded one).
func TestExtractFastInvalidUTF8(t *testing.T) {
	e := NewExtractor()
	const url = "https://habr.com/ru/articles/1/"
	page := strings.Replace(strings.Replace(fastPage, "%s", "", 1), "%s", "Title", 1)
	page = strings.Replace(page, "<head>", `<head><meta charset="utf-8">`, 1) // as on every Habr page
	tests := []struct {
		name      string
		page      string
		fastOnRaw bool
		markdown  string
	}{
		{"bad byte in the comments", strings.Replace(page, "a comment", "a \xff comment", 1), true, "Текст\n"},
		{"bad byte in the body", strings.Replace(page, "<p>Текст", "<p>Те\xffкст", 1), false, "Те\uFFFDкст\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.page)
			if _, ok := e.extractFast(url, raw, true); ok != tt.fastOnRaw {
				t.Errorf("fast path on the raw page taken: %v, want %v", ok, tt.fastOnRaw)
			}
			got, err := e.Extract(url, raw)
			if err != nil {
				t.Fatal(err)
			}
			decoded, _, err := toUTF8(raw, "")
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.extractWholePage(url, decoded)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || got.Markdown != tt.markdown {
				t.Errorf("got %+v\nwant %+v (Markdown %q)", got, want, tt.markdown)
			}
		})
	}
}

// Fuzzing the fast path against the whole-page parse. Where both find an article they agree.
// They may disagree on whether there is one when an end tag inside the article closes an
// element opened before it (a stray </main>): the whole page then loses part of the article,
// the fast path does not see the outer element. Habr's markup has no such tags; the fixtures
// show the two paths identical. Nothing may make either path panic.
func FuzzExtractFast(f *testing.F) {
	page := func(before, title string) []byte {
		return []byte(strings.Replace(strings.Replace(fastPage, "%s", before, 1), "%s", title, 1))
	}
	f.Add(page("", "Title"))
	f.Add(page(`<!-- <article> -->`, "Title"))
	f.Add(page(`<script>var s = "</article>";</script>`, "T"))
	f.Add(page(`<svg><title>x</title><style>a</style></svg>`, ""))
	f.Add(page(`<article class="preview">`, "Title"))
	f.Add([]byte(`<html><body><div class="tm-article-hubs`))
	f.Add([]byte(`<div class="tm-article-hubs"><a class="tm-article-hubs__hub">Go</a></div><article><div class="article-formatted-body">x</div></article>`))
	f.Add([]byte(`<meta property="og:title" content="T"><article class="post post_full"><div class="post__text">a</div></article>`))
	e := NewExtractor()
	const url = "https://habr.com/ru/articles/1/"
	f.Fuzz(func(t *testing.T, page []byte) {
		fast, ok := e.extractFast(url, page, true)
		whole, err := e.extractWholePage(url, page)
		if !ok || err != nil {
			return
		}
		if !reflect.DeepEqual(fast, whole) {
			t.Errorf("fast path differs:\nfast  %+v\nwhole %+v", fast, whole)
		}
	})
}
