package habr

import (
	"time"

	"github.com/PuerkitoBio/goquery"
)

// The metadata selectors, one list per field, newest layout first; the
// first selector that matches wins. Each is scoped to the article's own
// header, because every layout also shows other articles' authors and hubs.
var (
	titleSelectors = []string{
		"h1.tm-title span",                     // SPA 2023–2025
		"h1.tm-article-snippet__title_h1 span", // SPA 2021–2022
		"h1.tm-article-title_fullview",         // m.habr.com 2019
		".post_full .post__title-text",         // legacy
	}
	authorSelectors = []string{
		".tm-article-presenter__header a.tm-user-info__username", // SPA 2022–2025
		".tm-article-snippet__meta a.tm-user-info__username",     // SPA 2021
		".tm-user-meta .tm-user-info__username",                  // m.habr.com 2019
		".post_full .post__meta .user-info__nickname",            // legacy
	}
	hubSelectors = []string{
		".tm-publication-hub__link",           // SPA 2023–2025
		".tm-article-snippet__hubs-item-link", // SPA 2021–2022
		".tm-article-hubs__link",              // m.habr.com 2019
		".post_full .post__hubs a.hub-link",   // legacy
	}
	tagSelectors = []string{
		".tm-tags-list__link", // SPA 2022–2025
		// SPA 2021 lists tags and hubs in one block; tags link to search.
		`.tm-article-body__tags-item-link[href*="/search/"]`,
		".tm-article__tags a",      // m.habr.com 2019
		".post_full .post__tags a", // legacy
	}
	// Exact publication times, each an attribute in UTC or with an offset.
	// Pages before 2019 and m.habr.com show only local, relative text
	// ("вчера в 21:22"), which cannot be turned into a time.
	timeSelectors = []struct{ selector, attr string }{
		{`meta[property="aiturec:datetime"]`, "content"},                       // SPA
		{".tm-article-datetime-published time[datetime]", "datetime"},          // SPA 2023–2025
		{".tm-article-snippet__datetime-published time[datetime]", "datetime"}, // SPA 2021–2022
		{".post_full .post__time[data-time_published]", "data-time_published"}, // legacy 2019
	}
	// Layouts of the attributes above: "2023-10-22T11:31:04.000Z" (RFC 3339
	// with fractions parses with time.RFC3339) and the legacy
	// "2019-08-06T20:33Z", without seconds.
	timeLayouts = []string{time.RFC3339, "2006-01-02T15:04Z07:00"}
)

// readMeta reads the title, author, time, hubs and tags of the article page.
func readMeta(doc *goquery.Document) Article {
	var a Article
	a.Title = firstText(doc, titleSelectors)
	if a.Title == "" {
		a.Title = squash(doc.Find(`meta[property="og:title"]`).AttrOr("content", ""))
	}
	a.Author = firstText(doc, authorSelectors)
	a.Hubs = allTexts(doc, hubSelectors)
	a.Tags = allTexts(doc, tagSelectors)
	a.PublishedAt = publishedAt(doc)
	return a
}

func firstText(doc *goquery.Document, selectors []string) string {
	for _, sel := range selectors {
		if t := squash(doc.Find(sel).First().Text()); t != "" {
			return t
		}
	}
	return ""
}

// allTexts returns the link texts of the first selector that matches. A
// hub link may end in a "*" mark for a profile hub, which is not part of
// its name.
func allTexts(doc *goquery.Document, selectors []string) []string {
	for _, sel := range selectors {
		var texts []string
		doc.Find(sel).Each(func(_ int, s *goquery.Selection) {
			s = s.Clone()
			s.Find(".tm-article-snippet__profiled-hub").Remove()
			if t := squash(s.Text()); t != "" {
				texts = append(texts, t)
			}
		})
		if len(texts) > 0 {
			return texts
		}
	}
	return nil
}

func publishedAt(doc *goquery.Document) time.Time {
	for _, ts := range timeSelectors {
		v, ok := doc.Find(ts.selector).First().Attr(ts.attr)
		if !ok {
			continue
		}
		for _, layout := range timeLayouts {
			if t, err := time.Parse(layout, v); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}
