package habrfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
	xhtml "golang.org/x/net/html"
)

// Markers stand in the template for what differs from page to page. They
// are plain ASCII so that HTML rendering leaves them as they are.
const (
	mTitle      = "@@TITLE@@"
	mLead       = "@@LEAD@@"
	mAuthor     = "@@AUTHOR@@"
	mAuthorPath = "@@AUTHORPATH@@"
	mID         = "@@ID@@"
	mURL        = "@@URL@@"
	mPath       = "@@PATH@@"
	mLang       = "@@LANG@@"
	mISO        = "@@ISO@@"
	mTimeTitle  = "@@TIMETITLE@@"
	mTimeText   = "@@TIMETEXT@@"
	mLDJSON     = "@@LDJSON@@"
	mHubs       = "@@HUBS@@"
	mTags       = "@@TAGS@@"
	mHubLinks   = "@@HUBLINKS@@"
	mEditor     = "@@EDITOR@@"
	mBody       = "@@BODY@@"

	mCode      = "@@CODE@@"
	mErrTitle  = "@@ERRTITLE@@"
	mErrDetail = "@@ERRDETAIL@@"
)

// The template page's own values, replaced by markers wherever they occur.
const (
	tplID     = "568382"
	tplPath   = "/ru/post/568382/"
	tplAuthor = "rvnikita"
	tplTitle  = "Digital-мероприятия в Москве c 19 по 25 июля"
	tplISO    = "2021-07-19T07:02:37.000Z"
)

// moscow is the zone Habr shows times in.
var moscow = time.FixedZone("MSK", 3*60*60)

var monthsGenitive = [...]string{"января", "февраля", "марта", "апреля", "мая", "июня",
	"июля", "августа", "сентября", "октября", "ноября", "декабря"}

// pageTemplate is a real Habr page (the raw 2021 SSR HTML of article 568382)
// with markers in place of everything that belongs to that article.
type pageTemplate struct {
	article string // the article page
	errPage string // the same layout with the SPA error screen as content
}

func newPageTemplate(src []byte) (*pageTemplate, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	removeAppState(doc)
	errDoc := goquery.NewDocumentFromNode(doc.Clone().Nodes[0])

	article, err := markArticle(doc)
	if err != nil {
		return nil, err
	}
	errPage, err := markErrorPage(errDoc)
	if err != nil {
		return nil, err
	}
	return &pageTemplate{article: article, errPage: errPage}, nil
}

// markArticle replaces the article-specific parts of the template page with
// markers and checks that every marker landed.
func markArticle(doc *goquery.Document) (string, error) {
	doc.Find("head > title").SetText(mTitle + " / Хабр")
	doc.Find(`script[type="application/ld+json"]`).SetText(mLDJSON)
	doc.Find(`meta[name="description"], meta[itemprop="description"], meta[property="og:description"],`+
		`meta[name="twitter:description"], meta[property="aiturec:description"]`).SetAttr("content", mLead)
	doc.Find(`link[rel="canonical"]`).SetAttr("href", mURL)

	article := doc.Find("article.tm-page-article__content")
	article.Find("h1.tm-article-snippet__title").SetAttr("lang", mLang).Find("span").SetText(mTitle)
	article.Find(".tm-article-snippet__datetime-published time").
		SetAttr("datetime", mISO).SetAttr("title", mTimeTitle).SetText(mTimeText)
	article.Find("a.tm-user-info__username").SetText(mAuthor)
	article.Find(".tm-article-snippet__hubs").SetHtml(mHubs)
	article.Find(".tm-article-body").First().SetAttr("lang", mLang)
	article.Find("#post-content-body").
		SetAttr("class", "article-formatted-body article-formatted-body_version-"+mEditor).
		SetHtml(`<div xmlns="http://www.w3.org/1999/xhtml">` + mBody + `</div>`)
	tagBlocks := article.Find(".tm-article-body__tags-links")
	tagBlocks.Eq(0).SetHtml(`<span class="tm-article-body__tags-title">Теги:</span>` + mTags)
	tagBlocks.Eq(1).SetHtml(`<span class="tm-article-body__tags-title">Хабы:</span>` + mHubLinks)

	// Whatever else still names the template's article (share images, the
	// comments link, the author card) is rewritten wherever it occurs.
	for _, n := range doc.Nodes {
		walk(n, func(n *xhtml.Node) {
			if n.Type != xhtml.TextNode {
				return
			}
			switch strings.TrimSpace(n.Data) {
			case tplAuthor, "@" + tplAuthor: // the login, and the author card's "@login"
				n.Data = strings.Replace(n.Data, tplAuthor, mAuthor, 1)
			}
		})
	}
	rewriteAttrs(doc, strings.NewReplacer(
		tplPath, mPath,
		"/users/"+tplAuthor+"/", "/users/"+mAuthorPath+"/",
		tplAuthor, mAuthor,
		tplID, mID,
		tplTitle, mTitle,
		tplISO, mISO,
	))

	text, err := doc.Html()
	if err != nil {
		return "", err
	}
	return text, checkMarkers(text, mTitle, mLead, mAuthor, mAuthorPath, mID, mURL, mPath, mLang, mISO,
		mTimeTitle, mTimeText, mLDJSON, mHubs, mTags, mHubLinks, mEditor, mBody)
}

// markErrorPage keeps the template's layout (header, menus, footer) and puts
// Habr's SPA error screen where the page content goes. Habr shows 404 and
// "access closed" pages this way (research habr.md §2: div.tm-error-message
// with __code, __title and __body); the wording of the detail line is
// reconstructed, not copied from a real page.
func markErrorPage(doc *goquery.Document) (string, error) {
	doc.Find(`script[type="application/ld+json"], link[rel="canonical"], link[rel="alternate"], link[image_src]`).Remove()
	doc.Find("meta").FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.Contains(s.AttrOr("content", ""), tplTitle) ||
			strings.Contains(s.AttrOr("content", ""), tplID) ||
			strings.Contains(s.AttrOr("name", "")+s.AttrOr("property", "")+s.AttrOr("itemprop", ""), "description")
	}).Remove()
	doc.Find("head > title").SetText(mErrTitle + " / Хабр")
	// Links that come back to the page after logging in.
	rewriteAttrs(doc, strings.NewReplacer(tplPath, "/ru/"))
	doc.Find("main.tm-layout__container").SetHtml(
		`<div class="tm-page"><div class="tm-page-width"><div class="tm-page__wrapper">` +
			`<div class="tm-page__main tm-page__main_has-sidebar"><div class="tm-error-message">` +
			`<div class="tm-error-message__code">` + mCode + `</div>` +
			`<h1 class="tm-error-message__title">` + mErrTitle + `</h1>` +
			`<div class="tm-error-message__body">` + mErrDetail + `</div>` +
			`</div></div></div></div></div>`)
	text, err := doc.Html()
	if err != nil {
		return "", err
	}
	if strings.Contains(text, tplID) || strings.Contains(text, tplTitle) {
		return "", fmt.Errorf("error page template still mentions article %s", tplID)
	}
	return text, checkMarkers(text, mCode, mErrTitle, mErrDetail)
}

// removeAppState drops window.__INITIAL_STATE__: it holds the template
// article's full JSON, and an extractor falling back to it would read the
// wrong article.
func removeAppState(doc *goquery.Document) {
	doc.Find("script").FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.HasPrefix(strings.TrimSpace(s.Text()), "window.__INITIAL_STATE__")
	}).Remove()
}

// rewriteAttrs applies r to every attribute value in doc.
func rewriteAttrs(doc *goquery.Document, r *strings.Replacer) {
	for _, n := range doc.Nodes {
		walk(n, func(n *xhtml.Node) {
			for i := range n.Attr {
				n.Attr[i].Val = r.Replace(n.Attr[i].Val)
			}
		})
	}
}

func walk(n *xhtml.Node, fn func(*xhtml.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func checkMarkers(text string, markers ...string) error {
	for _, m := range markers {
		if !strings.Contains(text, m) {
			return fmt.Errorf("page template: marker %s not placed; has the template file changed?", m)
		}
	}
	return nil
}

// render fills the article template with a.
func (t *pageTemplate) render(a *article) []byte {
	local := a.published.In(moscow)
	canonical := "https://habr.com" + a.path
	lead := leadText(a.lead)
	return []byte(strings.NewReplacer(
		mTitle, escape(a.title),
		mLead, escape(lead),
		mAuthor, escape(a.author),
		mAuthorPath, escape(url.PathEscape(a.author)),
		mID, strconv.Itoa(a.id),
		mURL, escape(canonical),
		mPath, escape(a.path),
		mLang, escape(a.lang),
		mISO, a.published.UTC().Format("2006-01-02T15:04:05.000Z"),
		mTimeTitle, local.Format("2006-01-02, 15:04"),
		mTimeText, fmt.Sprintf("%d %s %d в %s", local.Day(), monthsGenitive[local.Month()-1], local.Year(), local.Format("15:04")),
		mLDJSON, ldJSON(a, canonical, lead),
		mHubs, hubsTop(a.hubs),
		mTags, tagLinks(a.tags),
		mHubLinks, hubLinks(a.hubs),
		mEditor, strconv.Itoa(max(a.editor, 1)),
		mBody, a.body,
	).Replace(t.article))
}

// renderError fills the error screen template.
func (t *pageTemplate) renderError(code int, title, detail string) []byte {
	return []byte(strings.NewReplacer(
		mCode, strconv.Itoa(code),
		mErrTitle, escape(title),
		mErrDetail, escape(detail),
	).Replace(t.errPage))
}

// ldJSON is the schema.org Article object Habr puts in <head>, in the shape
// of the template's.
func ldJSON(a *article, canonical, lead string) string {
	type thing struct {
		Type string `json:"@type"`
		ID   string `json:"@id,omitempty"`
		Name string `json:"name,omitempty"`
	}
	published := a.published.In(moscow).Format(time.RFC3339)
	b, err := json.Marshal(struct {
		Context          string `json:"@context"`
		Type             string `json:"@type"`
		MainEntityOfPage thing  `json:"mainEntityOfPage"`
		Headline         string `json:"headline"`
		DatePublished    string `json:"datePublished"`
		DateModified     string `json:"dateModified"`
		Author           thing  `json:"author"`
		Publisher        thing  `json:"publisher"`
		Description      string `json:"description"`
		URL              string `json:"url"`
	}{
		Context:          "http://schema.org",
		Type:             "Article",
		MainEntityOfPage: thing{Type: "WebPage", ID: canonical},
		Headline:         a.title,
		DatePublished:    published,
		DateModified:     published,
		Author:           thing{Type: "Person", Name: a.author},
		Publisher:        thing{Type: "Organization", Name: "Habr"},
		Description:      lead,
		URL:              canonical + "#post-content-body",
	})
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	return string(b) // json.Marshal escapes "<", so no "</script>" can appear
}

func hubsTop(hubs []hub) string {
	var b strings.Builder
	for _, h := range hubs {
		fmt.Fprintf(&b, `<span class="tm-article-snippet__hubs-item"><a href="%s" class="tm-article-snippet__hubs-item-link"><span>%s</span></a></span>`,
			escape(h.path), escape(h.title))
	}
	return b.String()
}

func hubLinks(hubs []hub) string {
	var b strings.Builder
	for _, h := range hubs {
		fmt.Fprintf(&b, `<span class="tm-article-body__tags-item"><a href="%s" class="tm-article-body__tags-item-link">%s</a></span>`,
			escape(h.path), escape(h.title))
	}
	return b.String()
}

func tagLinks(tags []string) string {
	var b strings.Builder
	for _, t := range tags {
		href := "/ru/search/?target_type=posts&order=relevance&q=" + url.QueryEscape("["+t+"]")
		fmt.Fprintf(&b, `<span class="tm-article-body__tags-item"><a href="%s" class="tm-article-body__tags-item-link">%s</a></span>`,
			escape(href), escape(t))
	}
	return b.String()
}

// leadText is the lead as the plain, shortened text Habr puts in its
// description meta tags.
func leadText(leadHTML string) string {
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(leadHTML))
	if err != nil {
		return ""
	}
	text := strings.Join(strings.Fields(doc.Text()), " ")
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) + "..."
	}
	return text
}

func escape(s string) string { return html.EscapeString(s) }
