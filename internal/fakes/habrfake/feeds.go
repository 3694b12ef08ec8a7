package habrfake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Feed paths the fake serves. The generated feeds list the whole catalogue
// in today's format; the others are the real fixture feeds, byte for byte.
const (
	FeedArticles = "/ru/rss/articles/" // generated: every article, newest first
	FeedNews     = "/ru/rss/news/"     // generated: the synthetic news items
	// The English site's feeds list the same catalogue; with ?fl=en (as Habr's own links
	// have) only the English publications.
	FeedArticlesEN = "/en/rss/articles/"
	FeedNewsEN     = "/en/rss/news/"
	FeedAll2019    = "/ru/rss/all/all/" // fixture: "Все публикации подряд", July 2019
	// FeedInteresting is the February 2018 fixture, whose links still point
	// at habrahabr.ru (habr.com redirects that host with the same path).
	FeedInteresting = "/ru/rss/interesting/"
	FeedMedsurg     = "/ru/rss/users/medsurg/publications/articles/" // fixture, abridged by its collector
)

// feedContentType is what the fake sends with feeds. Habr's real header was
// not captured in the research, so this is the RSS media type.
const feedContentType = "application/rss+xml; charset=UTF-8"

// defaultFeedLimit is the item count of every full feed capture (20);
// ?limit=N raises it, without the cap Habr may have (unknown).
const defaultFeedLimit = 20

// channelInfo is the fixed header of a generated feed.
type channelInfo struct {
	title, link, description string
	news                     bool
}

var generatedFeeds = map[string]channelInfo{
	FeedArticles:   {"Все статьи подряд / Хабр", "https://habr.com/ru/articles/", "Все статьи подряд на Хабре", false},
	FeedNews:       {"Все новости подряд / Хабр", "https://habr.com/ru/news/", "Все новости подряд на Хабре", true},
	FeedArticlesEN: {"All articles / Habr", "https://habr.com/en/articles/", "All articles on Habr", false},
	FeedNewsEN:     {"All news / Habr", "https://habr.com/en/news/", "All news on Habr", true},
}

// The XML shape of Habr's RSS (research habr.md §3.1).
type (
	rssDoc struct {
		XMLName xml.Name   `xml:"rss"`
		Version string     `xml:"version,attr"`
		DC      string     `xml:"xmlns:dc,attr"`
		Channel rssChannel `xml:"channel"`
	}
	rssChannel struct {
		Title          cdata    `xml:"title"`
		Link           string   `xml:"link"`
		Description    cdata    `xml:"description"`
		Language       string   `xml:"language"`
		ManagingEditor string   `xml:"managingEditor"`
		Generator      string   `xml:"generator"`
		PubDate        string   `xml:"pubDate"`
		Image          rssImage `xml:"image"`
		Items          []rssOut `xml:"item"`
	}
	rssImage struct {
		Link  string `xml:"link"`
		URL   string `xml:"url"`
		Title string `xml:"title"`
	}
	rssOut struct {
		Title       cdata   `xml:"title"`
		GUID        rssGUID `xml:"guid"`
		Link        string  `xml:"link"`
		Description cdata   `xml:"description"`
		PubDate     string  `xml:"pubDate"`
		Creator     cdata   `xml:"dc:creator"`
		Categories  []cdata `xml:"category"`
	}
	rssGUID struct {
		IsPermaLink bool   `xml:"isPermaLink,attr"`
		URL         string `xml:",chardata"`
	}
	cdata struct {
		Text string `xml:",cdata"`
	}
)

// generatedFeed renders one of the generated feeds for the query: limit
// (default 20) and fl, the comma-separated content languages (default all).
func (s *Server) generatedFeed(info channelInfo, q url.Values) *response {
	limit := defaultFeedLimit
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		limit = n
	}
	var langs []string
	if fl := q.Get("fl"); fl != "" {
		langs = strings.Split(fl, ",")
	}

	ch := rssChannel{
		Title:          cdata{info.title},
		Link:           info.link,
		Description:    cdata{info.description},
		Language:       "ru",
		ManagingEditor: "editor@habr.com",
		Generator:      "habr.com",
		Image: rssImage{
			Link:  "https://habr.com/ru/",
			URL:   "https://habrastorage.org/webt/ym/el/wk/ymelwk3zy1gawz4nkejl_-ammtc.png",
			Title: "Хабр",
		},
	}
	for _, a := range s.newestFirst {
		if len(ch.Items) == limit {
			break
		}
		if a.news != info.news || langs != nil && !slices.Contains(langs, a.lang) {
			continue
		}
		ch.Items = append(ch.Items, feedItem(a))
	}
	if len(ch.Items) > 0 {
		ch.PubDate = ch.Items[0].PubDate
	}

	body, err := xml.MarshalIndent(rssDoc{Version: "2.0", DC: "http://purl.org/dc/elements/1.1/", Channel: ch}, "", "  ")
	if err != nil {
		// Only strings go in, so this is a programming error.
		return &response{status: http.StatusInternalServerError, contentType: "text/plain; charset=utf-8", body: []byte(err.Error())}
	}
	return &response{status: http.StatusOK, contentType: feedContentType, body: append([]byte(xml.Header), body...)}
}

// feedItem renders a in today's item format: the link carries Habr's utm
// parameters in the 2026 order, the description is the lead plus the
// read-more link to #habracut.
func feedItem(a *article) rssOut {
	canonical := "https://habr.com" + a.path
	link := fmt.Sprintf("%s?utm_campaign=%d&utm_source=habrahabr&utm_medium=rss", canonical, a.id)
	it := rssOut{
		Title:       cdata{a.title},
		GUID:        rssGUID{IsPermaLink: true, URL: canonical},
		Link:        link,
		Description: cdata{fmt.Sprintf(`%s <a href="%s#habracut">%s</a>`, a.lead, escape(link), a.readMore)},
		PubDate:     a.published.UTC().Format(http.TimeFormat),
		Creator:     cdata{a.author},
	}
	for _, h := range a.hubs {
		it.Categories = append(it.Categories, cdata{h.title})
	}
	for _, t := range a.tags {
		it.Categories = append(it.Categories, cdata{t})
	}
	return it
}
