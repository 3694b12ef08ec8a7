package habrfake

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// article is one publication the fake serves, either as a real fixture page
// (page is set) or rendered from the page template.
type article struct {
	id        int
	path      string // canonical path on habr.com, e.g. /ru/post/568382/
	news      bool   // listed in the news feed instead of the articles feed
	lang      string // "ru" or "en"
	title     string
	author    string // login
	published time.Time
	lead      string // HTML, as in an RSS description without the read-more link
	readMore  string // the read-more link text
	body      string // HTML of the rendered page's body; unused when page is set
	editor    int    // 1 or 2: the article-formatted-body_version-N class
	hubs      []hub
	tags      []string
	page      []byte // the real page, served verbatim
}

// hub is a Habr hub or company blog an article belongs to.
type hub struct {
	title string
	path  string // e.g. /ru/hub/go/ or /ru/company/ruvds/blog/
}

// fixturePage is a real article page from the fixtures, served at its real
// path. Author and date are copied from the page; the title and lead are
// read from its og: tags when loading.
type fixturePage struct {
	id        int
	path      string
	file      string
	author    string
	published string // RFC 3339
	lang      string
}

// fixturePages lists the real article pages. Old pages keep their old path
// shapes (habr.com/post/ID/ in 2018); habrahabr.ru and geektimes.ru pages
// are served where habr.com took them over.
var fixturePages = []fixturePage{
	{1000, "/post/1000/", "html/habr-com-post-1000-legacy-2018.html", "Maxime", "2006-12-26T09:10:00Z", "ru"},
	// The saved page only says "вчера в 21:22"; the day is an estimate from
	// when the page was saved (April 2018).
	{354052, "/post/354052/", "html/habrahabr-ru-post-354052-legacy-2018.html", "Nexon", "2018-04-23T18:22:00Z", "ru"},
	// As above: "вчера в 20:26", day estimated.
	{300211, "/ru/post/300211/", "html/geektimes-ru-post-300211-legacy-2018.html", "Alexandr2001", "2018-04-23T17:26:00Z", "ru"},
	{462783, "/ru/company/parallels/blog/462783/", "html/habr-com-ru-company-parallels-blog-462783-legacy-2019.html", "SmirkinDA", "2019-08-06T20:33:00Z", "ru"},
	{453232, "/en/post/453232/", "html/habr-com-en-post-453232-spa-v1-saved-page.md.html", "lostmsu", "2019-05-23T22:14:02Z", "en"},
	{568382, "/ru/post/568382/", templateFile, "rvnikita", "2021-07-19T07:02:37Z", "ru"},
	{769102, "/ru/articles/769102/", "html/habr-com-ru-articles-769102-spa-2025-v2.263.html", "panyukovnikolay", "2023-10-22T11:31:04Z", "ru"},
}

// Fixture files besides the article pages.
const (
	templateFile    = "html/habr-com-ru-post-568382-spa-2021-v2.39.html"
	listingFile     = "html/listing-habr-com-ru-all-spa-2021-v2.39.html"
	apiPostsFile    = "api/api-v1-posts-all-page1-2021-08.json"
	feedAll2019     = "rss/habr-rss-all-2019-07.xml"
	feedBest2018    = "rss/habrahabr-ru-rss-interesting-2018-02.xml"
	feedUserMedsurg = "rss/habr-rss-user-medsurg-articles-abridged.xml"
)

// articlePathRE matches the URL shapes Habr has used for one article; the
// group is the id.
var articlePathRE = regexp.MustCompile(
	`^/(?:(?:ru|en)/)?(?:post|articles|news|sandbox|(?:company|companies)/[^/]+/(?:blog|articles|news))/(\d+)/?$`)

func idFromPath(path string) (int, bool) {
	m := articlePathRE.FindStringSubmatch(path)
	if m == nil {
		return 0, false
	}
	id, err := strconv.Atoi(m[1])
	return id, err == nil
}

func loadFixturePages(fsys fs.FS) ([]*article, error) {
	var out []*article
	for _, fp := range fixturePages {
		page, err := fs.ReadFile(fsys, fp.file)
		if err != nil {
			return nil, err
		}
		title, lead := ogTags(page)
		published, err := time.Parse(time.RFC3339, fp.published)
		if err != nil || title == "" {
			return nil, fmt.Errorf("%s: no og:title or bad date %q", fp.file, fp.published)
		}
		out = append(out, &article{
			id:        fp.id,
			path:      fp.path,
			lang:      fp.lang,
			title:     title,
			author:    fp.author,
			published: published,
			lead:      "<p>" + escape(strings.TrimSpace(lead)) + "</p>",
			readMore:  "Читать далее",
			page:      page,
		})
	}
	return out, nil
}

// ogTags returns a page's og:title and og:description. It reads only as
// far as the end of <head>: parsing whole pages made New slow.
func ogTags(page []byte) (title, description string) {
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		tt := z.Next()
		switch {
		case tt == html.ErrorToken:
			return title, description
		case tt == html.EndTagToken && z.Token().Data == "head":
			return title, description
		case tt == html.StartTagToken || tt == html.SelfClosingTagToken:
			tok := z.Token()
			if tok.Data != "meta" {
				continue
			}
			var property, content string
			for _, a := range tok.Attr {
				switch a.Key {
				case "property":
					property = a.Val
				case "content":
					content = a.Val
				}
			}
			switch property {
			case "og:title":
				title = content
			case "og:description":
				description = content
			}
		}
	}
}

// apiPost is the part of a post in Habr's legacy mobile API
// (/api/v1/posts/all) that the fake uses.
type apiPost struct {
	ID            int    `json:"id"`
	TimePublished string `json:"time_published"`
	Lang          string `json:"lang"`
	Title         string `json:"title"`
	TagsString    string `json:"tags_string"`
	PreviewHTML   string `json:"preview_html"`
	TextCut       string `json:"text_cut"`
	TextHTML      string `json:"text_html"`
	EditorVersion int    `json:"editor_version"`
	URL           string `json:"url"`
	Author        struct {
		Login string `json:"login"`
	} `json:"author"`
	Hubs []struct {
		Alias     string `json:"alias"`
		Title     string `json:"title"`
		IsCompany bool   `json:"is_company"`
	} `json:"hubs"`
}

// loadAPIPosts turns the 20 real posts of the API fixture into articles
// with their real full text, rendered into the page template.
func loadAPIPosts(fsys fs.FS) ([]*article, error) {
	raw, err := fs.ReadFile(fsys, apiPostsFile)
	if err != nil {
		return nil, err
	}
	var page struct {
		Data []apiPost `json:"data"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, fmt.Errorf("%s: %w", apiPostsFile, err)
	}
	var out []*article
	for _, p := range page.Data {
		u, err := url.Parse(p.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: post %d: %w", apiPostsFile, p.ID, err)
		}
		published, err := time.Parse(time.RFC3339, p.TimePublished)
		if err != nil {
			return nil, fmt.Errorf("%s: post %d: %w", apiPostsFile, p.ID, err)
		}
		a := &article{
			id:        p.ID,
			path:      u.Path,
			lang:      p.Lang,
			title:     p.Title,
			author:    p.Author.Login,
			published: published,
			lead:      p.PreviewHTML,
			readMore:  p.TextCut,
			body:      p.TextHTML,
			editor:    p.EditorVersion,
		}
		for _, h := range p.Hubs {
			path := "/ru/hub/" + h.Alias + "/"
			if h.IsCompany {
				path = "/ru/company/" + h.Alias + "/blog/"
			}
			a.hubs = append(a.hubs, hub{title: h.Title, path: path})
		}
		for _, tag := range strings.Split(p.TagsString, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				a.tags = append(a.tags, tag)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// rssItem is an item of a real RSS fixture.
type rssItem struct {
	Title       string   `xml:"title"`
	GUID        string   `xml:"guid"`
	Link        string   `xml:"link"`
	Description string   `xml:"description"`
	PubDate     string   `xml:"pubDate"`
	Creator     string   `xml:"http://purl.org/dc/elements/1.1/ creator"`
	Categories  []string `xml:"category"`
}

// readMoreLink is the "Читать дальше →" link that ends every description.
var readMoreLink = regexp.MustCompile(`\s*<a href="[^"]*#habracut">([^<]*)</a>\s*$`)

// loadFeedItems turns the items of a real feed into articles whose pages
// are rendered from the template, with the description as the body: the
// feed only has the lead, so that is all the page can show.
func loadFeedItems(fsys fs.FS, file string) ([]*article, error) {
	raw, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Items []rssItem `xml:"channel>item"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []*article
	for _, it := range doc.Items {
		u, err := url.Parse(strings.TrimSpace(it.Link))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		id, ok := idFromPath(u.Path)
		if !ok {
			return nil, fmt.Errorf("%s: item link %q is not an article", file, it.Link)
		}
		published, err := time.Parse(time.RFC1123, strings.TrimSpace(it.PubDate))
		if err != nil {
			return nil, fmt.Errorf("%s: item %d: %w", file, id, err)
		}
		lead, readMore := strings.TrimSpace(it.Description), "Читать дальше →"
		if m := readMoreLink.FindStringSubmatch(lead); m != nil {
			lead, readMore = lead[:len(lead)-len(m[0])], m[1]
		}
		editor := 1 // editor-v1 leads are <br>-separated text
		if strings.HasPrefix(lead, "<p>") {
			editor = 2
		}
		out = append(out, &article{
			id:        id,
			path:      u.Path,
			lang:      "ru",
			title:     strings.TrimSpace(it.Title),
			author:    strings.TrimSpace(it.Creator),
			published: published,
			lead:      lead,
			readMore:  readMore,
			body:      lead,
			editor:    editor,
			tags:      it.Categories,
		})
	}
	return out, nil
}

// Synthetic articles: ids and dates continue after the newest real item
// (the 2026 user feed), so they read as new publications.
const (
	extraFirstID = 1_100_001
	extraStep    = 10 * time.Minute
	extraNewsN   = 5 // every 5th synthetic publication is news
)

var extraEpoch = time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)

// extraArticles makes n synthetic publications. Each takes the real body,
// hubs and tags of one of the API posts, in turn, under its own id, title
// and date, and opens with a line naming itself so that no two bodies are
// identical.
func extraArticles(n int, sources []*article) []*article {
	out := make([]*article, 0, n)
	for i := range n {
		src := sources[i%len(sources)]
		id := extraFirstID + i
		a := &article{
			id:        id,
			path:      fmt.Sprintf("/ru/articles/%d/", id),
			lang:      src.lang,
			title:     fmt.Sprintf("Синтетическая публикация №%d. %s", i+1, src.title),
			author:    src.author,
			published: extraEpoch.Add(time.Duration(i) * extraStep),
			lead:      src.lead,
			readMore:  "Читать далее",
			body:      fmt.Sprintf("<p>Синтетическая публикация №%d по мотивам публикации %d.</p>\n", i+1, src.id) + src.body,
			editor:    src.editor,
			hubs:      src.hubs,
			tags:      src.tags,
		}
		if (i+1)%extraNewsN == 0 {
			a.news = true
			a.path = fmt.Sprintf("/ru/news/%d/", id)
		}
		out = append(out, a)
	}
	return out
}
