package habr

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
)

// FeedItem is one publication announced by a Habr RSS feed.
type FeedItem struct {
	ID           int64     // Habr article id, the publication's identity
	URL          string    // canonical https://habr.com/... URL (see CanonicalURL)
	Title        string    // as given, including prefixes such as "[Перевод]"
	Author       string    // dc:creator login; empty in some feeds
	PublishedAt  time.Time // pubDate in UTC
	PublishedRaw string    // pubDate exactly as received
	Categories   []string  // hubs and tags, in feed order
}

// ItemError describes one feed item that was skipped.
type ItemError struct {
	Index int    // 1-based position of the item in the feed
	GUID  string // as received, possibly empty
	Link  string // as received, possibly empty
	Err   error
}

// Error implements error.
func (e ItemError) Error() string {
	return fmt.Sprintf("feed item %d (link %q): %v", e.Index, e.Link, e.Err)
}

// Unwrap returns the reason the item was skipped.
func (e ItemError) Unwrap() error { return e.Err }

// FeedError reports a feed that cannot be read as a whole, with the position
// where reading stopped.
type FeedError struct {
	Line, Column int
	Offset       int64 // byte offset into the input
	Err          error
}

// Error implements error.
func (e *FeedError) Error() string {
	return fmt.Sprintf("rss feed: line %d, column %d (byte %d): %v", e.Line, e.Column, e.Offset, e.Err)
}

// Unwrap returns the decoder's error or why the document is not RSS.
func (e *FeedError) Unwrap() error { return e.Err }

// ErrNotRSS is wrapped by the FeedError of a document that is well-formed
// XML (or HTML) but not an RSS 2.0 feed.
var ErrNotRSS = errors.New("not an RSS 2.0 feed")

// rssItem is an <item> as it appears on the wire.
type rssItem struct {
	Title      string   `xml:"title"`
	Link       string   `xml:"link"`
	GUID       string   `xml:"guid"`
	PubDate    string   `xml:"pubDate"`
	Creator    string   `xml:"http://purl.org/dc/elements/1.1/ creator"`
	Categories []string `xml:"category"`
}

// ParseFeed reads an RSS 2.0 feed item by item.
//
// Items that cannot be used (no link, a link that is not a Habr article, an
// unparseable pubDate) are returned in bad and do not stop the parse.
//
// err is non-nil, as a *FeedError, only when the feed itself cannot be read:
// not XML, not RSS, or XML that breaks off. In the last case items and bad
// still hold everything read before the break, so a caller may keep the items
// that arrived intact.
func ParseFeed(r io.Reader) (items []FeedItem, bad []ItemError, err error) {
	d := xml.NewDecoder(r)
	// Feeds are produced by templates and often carry HTML entities or a bare
	// "&" in titles; a lenient decoder keeps one such item from costing the
	// whole feed.
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charset.NewReaderLabel

	fail := func(err error) error {
		line, col := d.InputPos()
		return &FeedError{Line: line, Column: col, Offset: d.InputOffset(), Err: err}
	}

	var (
		path    []string // local names of the open elements, root first
		channel bool     // an <rss><channel> was seen
		index   int      // items seen so far, good or bad
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			// The decoder reports a root element left open as a syntax
			// error, so a clean EOF means there was no element at all.
			return nil, nil, fail(errors.New("no XML root element"))
		}
		if err != nil {
			return items, bad, fail(err)
		}

		switch t := tok.(type) {
		case xml.StartElement:
			if len(path) == 0 && t.Name.Local != "rss" {
				return nil, nil, fail(fmt.Errorf("%w: root element is <%s>", ErrNotRSS, t.Name.Local))
			}
			if len(path) == 1 && t.Name.Local == "channel" {
				channel = true
			}
			if len(path) == 2 && path[1] == "channel" && t.Name.Local == "item" {
				index++
				var it rssItem
				if err := d.DecodeElement(&it, &t); err != nil {
					return items, bad, fail(fmt.Errorf("item %d: %w", index, err))
				}
				item, err := it.feedItem()
				if err != nil {
					bad = append(bad, ItemError{Index: index, GUID: it.GUID, Link: it.Link, Err: err})
					continue
				}
				items = append(items, item)
				continue
			}
			path = append(path, t.Name.Local)
		case xml.EndElement:
			path = path[:len(path)-1]
			if len(path) == 0 {
				// The root element is closed; anything after it is not feed.
				if !channel {
					return nil, nil, fail(fmt.Errorf("%w: <rss> has no <channel>", ErrNotRSS))
				}
				return items, bad, nil
			}
		}
	}
}

func (it rssItem) feedItem() (FeedItem, error) {
	if strings.TrimSpace(it.Link) == "" {
		return FeedItem{}, errors.New("item has no link")
	}
	id, canonical, err := CanonicalURL(it.Link)
	if err != nil {
		return FeedItem{}, err
	}
	published, err := parsePubDate(it.PubDate)
	if err != nil {
		return FeedItem{}, err
	}
	var categories []string
	for _, c := range it.Categories {
		if c = strings.TrimSpace(c); c != "" {
			categories = append(categories, c)
		}
	}
	return FeedItem{
		ID:           id,
		URL:          canonical,
		Title:        strings.TrimSpace(it.Title),
		Author:       strings.TrimSpace(it.Creator),
		PublishedAt:  published,
		PublishedRaw: it.PubDate,
		Categories:   categories,
	}, nil
}

// pubDateLayouts are the RFC 1123 (RFC 822 with a four-digit year) forms a
// feed may use: a zone name or a numeric offset, with or without the
// weekday, with a one- or two-digit day.
var pubDateLayouts = []string{
	time.RFC1123Z,
	time.RFC1123,
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST",
}

// parsePubDate parses an RSS pubDate into UTC.
//
// A zone name other than GMT or UTC is rejected: time.Parse would give
// an unknown name a zero offset, silently shifting the time by hours.
func parsePubDate(raw string) (time.Time, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return time.Time{}, errors.New("item has no pubDate")
	}
	for _, layout := range pubDateLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		if strings.HasSuffix(layout, "MST") {
			zone := s[strings.LastIndexByte(s, ' ')+1:]
			if zone != "GMT" && zone != "UTC" {
				return time.Time{}, fmt.Errorf("pubDate %q: unsupported time zone %q", raw, zone)
			}
		}
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("pubDate %q is not an RFC 1123 date", raw)
}
