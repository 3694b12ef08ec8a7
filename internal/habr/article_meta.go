package habr

import (
	"bytes"
	"regexp"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// A layout is one generation of Habr's article page: where its body is and
// where it shows the article's metadata. Every list is tried in order, the
// newest markup of that generation first; see shared/research/habr.md §1.
//
// The metadata selectors are scoped to the article's own header, because
// every page also shows other articles' authors, hubs and times. Knowing
// the layout from the body keeps the number of passes over the page, which
// can hold 100,000 nodes of comments, small.
type layout struct {
	body string // the body container
	// scope, if set, is the element that holds the article with its
	// metadata; the metadata selectors then search it, not the page.
	scope  string
	title  []string
	author []string
	hubs   []string
	tags   []string
	// origin links to the original of a translation; its text names the original's author.
	origin []string
	// Exact publication times, each an attribute in UTC or with an
	// offset. Pages before 2019 and m.habr.com show only local, relative
	// text ("вчера в 21:22"), which cannot be turned into a time.
	times []timeAttr
}

type timeAttr struct{ selector, attr string }

var (
	ogTitle         = css(`meta[property="og:title"]`)
	profiledHubMark = css(".tm-article-snippet__profiled-hub")
)

var layouts = []layout{
	{
		// The Vue site, 2020–2025 (in 2025 inside div.article-body), editor
		// v1 and v2, and megaposts, which lack .article-formatted-body.
		body:   "#post-content-body",
		title:  []string{"h1.tm-title span", "h1.tm-article-snippet__title_h1 span"},
		author: []string{".tm-article-presenter__header a.tm-user-info__username", ".tm-article-snippet__meta a.tm-user-info__username"},
		hubs:   []string{".tm-publication-hub__link", ".tm-article-snippet__hubs-item-link"},
		tags: []string{
			".tm-tags-list__link",
			// 2021 lists tags and hubs in one block; tags link to search.
			`.tm-article-body__tags-item-link[href*="/search/"]`,
		},
		origin: []string{".tm-article-presenter__origin-link"},
		times: []timeAttr{
			{`meta[property="aiturec:datetime"]`, "content"},
			{".tm-article-datetime-published time[datetime]", "datetime"},
			{".tm-article-snippet__datetime-published time[datetime]", "datetime"},
		},
	},
	{
		// The server-rendered desktop site up to 2020: habrahabr.ru,
		// geektimes.ru, habr.com. A listing shows .post_preview instead.
		// Its pages carry every comment; the scope spares a pass over them.
		body:   ".post_full .post__text",
		scope:  ".post_full",
		title:  []string{".post__title-text"},
		author: []string{".post__meta .user-info__nickname"},
		hubs:   []string{".post__hubs a.hub-link"},
		tags:   []string{".post__tags a"},
		origin: []string{"a.post__translatation-link"},
		times:  []timeAttr{{".post__time[data-time_published]", "data-time_published"}},
	},
	{
		// The 2019 Vue site on m.habr.com.
		body:   ".tm-article-body_formatted",
		title:  []string{"h1.tm-article-title_fullview"},
		author: []string{".tm-user-meta .tm-user-info__username"},
		hubs:   []string{".tm-article-hubs__link"},
		tags:   []string{".tm-article__tags a"},
	},
}

// timeLayouts parse the time attributes: "2023-10-22T11:31:04.000Z"
// (RFC 3339; the fraction is accepted) and the legacy "2019-08-06T20:33Z",
// without seconds.
var timeLayouts = []string{time.RFC3339, "2006-01-02T15:04Z07:00"}

// readMeta reads the title, author, time, hubs, company blog, tags and, if withOrigin (the
// page may have one, see mayHaveOrigin), translation origin of an article page of layout l. The
// author's display name is read from the page's bytes by authorName, since it is shown after
// the article.
func readMeta(doc *goquery.Document, l *layout, withOrigin bool) Article {
	in := doc.Selection
	if l.scope != "" {
		in = doc.FindMatcher(goquery.SingleMatcher(layoutSelector(l.scope)))
	}
	a := Article{
		Title:       firstText(in, l.title),
		Author:      firstText(in, l.author),
		Tags:        allTexts(in, l.tags),
		PublishedAt: publishedAt(in, l.times),
	}
	if withOrigin {
		a.Translation = origin(in, l.origin)
	}
	a.Hubs, a.Company = hubs(in, l.hubs)
	if a.Title == "" {
		a.Title = squash(doc.FindMatcher(goquery.SingleMatcher(ogTitle)).AttrOr("content", ""))
	}
	return a
}

// companyPath matches the link of a company blog among the hubs, in every form Habr has used:
// /ru/company/parallels/, /ru/company/x/blog/, /en/company/x/profile/, /ru/companies/x/articles/.
var companyPath = regexp.MustCompile(`/compan(?:y|ies)/([^/?#]+)`)

// hubs returns the hub names of the first selector that matches, and the company blog Habr
// lists among them, if any, apart.
func hubs(in *goquery.Selection, selectors []string) ([]string, Company) {
	var company Company
	for _, sel := range selectors {
		var names []string
		in.FindMatcher(layoutSelector(sel)).Each(func(_ int, s *goquery.Selection) {
			name := linkText(s)
			if name == "" {
				return
			}
			href := s.AttrOr("href", "")
			if !strings.Contains(href, "/compan") {
				names = append(names, name)
				return
			}
			if m := companyPath.FindStringSubmatch(href); m != nil && company.Alias == "" {
				company = Company{Alias: m[1], Name: name}
				return
			}
			names = append(names, name)
		})
		if len(names) > 0 || company.Alias != "" {
			return names, company
		}
	}
	return nil, company
}

// mayHaveOrigin reports whether the bytes of an article can hold a translation's origin link,
// whose class names end in "origin-link" or "translatation-link" (sic): one scan for their
// common end, then a look at what precedes each hit.
func mayHaveOrigin(article []byte) bool {
	for from := 0; ; {
		i := bytes.Index(article[from:], []byte("n-link"))
		if i < 0 {
			return false
		}
		i += from
		if bytes.HasSuffix(article[:i], []byte("origi")) || bytes.HasSuffix(article[:i], []byte("translatatio")) {
			return true
		}
		from = i + 6
	}
}

// origin reads a translation's origin link: its href is the original's URL, its text "Автор
// оригинала: Name" ("Original author: Name") names the original's author, in a <span> of its
// own in the 2023+ layout.
func origin(in *goquery.Selection, selectors []string) Translation {
	for _, sel := range selectors {
		a := in.FindMatcher(goquery.SingleMatcher(layoutSelector(sel)))
		if a.Length() == 0 {
			continue
		}
		author := squash(a.ChildrenFiltered("span").Last().Text())
		if author == "" {
			text := squash(a.Text())
			if _, after, ok := strings.Cut(text, ":"); ok {
				text = after
			}
			author = strings.TrimSpace(text)
		}
		return Translation{OriginalAuthor: author, OriginalURL: strings.TrimSpace(a.AttrOr("href", ""))}
	}
	return Translation{}
}

func firstText(in *goquery.Selection, selectors []string) string {
	for _, sel := range selectors {
		if t := squash(in.FindMatcher(goquery.SingleMatcher(layoutSelector(sel))).Text()); t != "" {
			return t
		}
	}
	return ""
}

// allTexts returns the link texts of the first selector that matches.
func allTexts(in *goquery.Selection, selectors []string) []string {
	for _, sel := range selectors {
		var texts []string
		in.FindMatcher(layoutSelector(sel)).Each(func(_ int, s *goquery.Selection) {
			if t := linkText(s); t != "" {
				texts = append(texts, t)
			}
		})
		if len(texts) > 0 {
			return texts
		}
	}
	return nil
}

// linkText is the text of a hub or tag link. A hub link may end in a "*" mark for a profile
// hub, which is not part of its name.
func linkText(s *goquery.Selection) string {
	if s.FindMatcher(profiledHubMark).Length() > 0 {
		s = s.Clone()
		s.FindMatcher(profiledHubMark).Remove()
	}
	return squash(s.Text())
}

func publishedAt(in *goquery.Selection, attrs []timeAttr) time.Time {
	for _, ta := range attrs {
		v, ok := in.FindMatcher(goquery.SingleMatcher(layoutSelector(ta.selector))).Attr(ta.attr)
		if !ok {
			continue
		}
		for _, tl := range timeLayouts {
			if t, err := time.Parse(tl, v); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}
