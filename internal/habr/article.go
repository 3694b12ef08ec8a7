package habr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// ExtractorVersion is stored with every Markdown row; bump it when the
// Markdown produced for the same page changes. Version 2: the Markdown classes
// of issue 13 (captions, escaping at every depth, line ends, emphasis runs,
// list starts, code in quotes, polls, tables, dollars, anchors, URLs as
// written, inline HTML). Version 3: issue 25 (a poll inside the body container once, embeds
// with their parameters, pipes in URLs in cells, entity text, line breaks in inline code).
const ExtractorVersion = "3"

// Article is what Extract reads from an article page.
type Article struct {
	Title       string
	Markdown    string    // the article body, then its polls, ending in one newline
	Author      string    // login; empty if the page does not show it
	AuthorName  string    // the author's display name; empty if the page shows none
	PublishedAt time.Time // UTC; zero if the page gives no exact time
	Hubs        []string  // the topic hubs; a company blog Habr lists among them is Company
	Tags        []string
	Company     Company     // the company blog the article is published in, if any
	Translation Translation // set for a translation whose page names the original
}

// Company is the company blog a publication belongs to.
type Company struct {
	Alias string // as in its URL: /ru/companies/<alias>/articles/
	Name  string // as the page shows it, e.g. "Блог компании Parallels"
}

// Translation names the original of a translated publication.
type Translation struct {
	OriginalAuthor string
	OriginalURL    string
}

// ErrStructure is matched by every error of a page that arrived but holds no
// complete article. Fetching it again will not help.
var ErrStructure = errors.New("no article in page")

// StructureError says why a page holds no extractable article.
type StructureError struct {
	Reason string
}

// Error implements error.
func (e *StructureError) Error() string { return "no article in page: " + e.Reason }

// Is makes errors.Is(err, ErrStructure) true for every *StructureError.
func (e *StructureError) Is(target error) bool { return target == ErrStructure }

func structural(format string, args ...any) error {
	return &StructureError{Reason: fmt.Sprintf(format, args...)}
}

// Extractor converts Habr article pages to Markdown. Build one per run with
// NewExtractor: it holds a single html-to-markdown converter, whose setup is
// the costly part, and it is safe for concurrent use.
type Extractor struct {
	conv *converter.Converter
}

// NewExtractor returns an Extractor.
func NewExtractor() *Extractor {
	return &Extractor{conv: newConverter()}
}

// Extract reads the article in page, the HTML of pageURL as it was fetched.
// pageURL is the base for relative links and images. Pages that are not
// UTF-8 are decoded by the charset their <meta> declares.
//
// An error for which errors.Is(err, ErrStructure) is true means the page
// holds no complete article: it is a stub of a deleted or hidden
// publication, a listing, not HTML at all, or a layout without a known body.
func (e *Extractor) Extract(pageURL string, page []byte) (Article, error) {
	return e.extract(pageURL, "", page)
}

// ExtractReader is Extract for a page read from r, such as an HTTP response
// body; contentType is that response's Content-Type header, whose charset
// takes precedence over the page's own declaration.
func (e *Extractor) ExtractReader(pageURL, contentType string, r io.Reader) (Article, error) {
	page, err := io.ReadAll(r)
	if err != nil {
		return Article{}, fmt.Errorf("read %s: %w", pageURL, err)
	}
	return e.extract(pageURL, contentType, page)
}

func (e *Extractor) extract(pageURL, contentType string, page []byte) (Article, error) {
	if sniffed := http.DetectContentType(page); !strings.HasPrefix(sniffed, "text/") {
		return Article{}, structural("not an HTML page: content is %s", sniffed)
	}
	// Checking that a whole page is valid UTF-8 costs a fifth of the fast path. A page whose
	// declared (or sniffed) charset is UTF-8 is read as it is, with its invalid bytes, if any,
	// replaced; so when the bytes the fast path parses are valid, the rest cannot change what
	// it reads.
	triedRaw := declaresUTF8(page, contentType)
	if triedRaw {
		if art, ok := e.extractFast(pageURL, page, true); ok {
			return art, nil
		}
	}
	page, decoded, err := toUTF8(page, contentType)
	if err != nil {
		return Article{}, structural("cannot decode page: %v", err)
	}
	// The fast path has seen these very bytes unless decoding changed them.
	if !triedRaw || decoded {
		if art, ok := e.extractFast(pageURL, page, false); ok {
			return art, nil
		}
	}
	return e.extractWholePage(pageURL, page)
}

// declaresUTF8 reports whether toUTF8 would decode page as UTF-8 were it not valid UTF-8: by
// the charset of contentType, a byte-order mark, a <meta> in its first 1024 bytes or, with
// none of them, those bytes being valid UTF-8.
func declaresUTF8(page []byte, contentType string) bool {
	_, name, _ := charset.DetermineEncoding(page[:min(len(page), 1024)], contentType)
	return name == "utf-8"
}

// extractWholePage parses the whole page. It is the reference for the fast
// path, and the only path that explains a page without an article.
func (e *Extractor) extractWholePage(pageURL string, page []byte) (Article, error) {
	root, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		// Reading from memory cannot fail, so this is the parser's limit
		// on nesting (512 open elements).
		return Article{}, structural("HTML cannot be parsed: %v", err)
	}
	if !hasMarkup(root) {
		return Article{}, structural("not an HTML page: no markup")
	}
	doc := goquery.NewDocumentFromNode(root)

	body, lay := findBody(doc)
	if body == nil {
		return Article{}, whyNoBody(doc)
	}
	art := readMeta(doc, lay, true)
	art.AuthorName = authorName(afterArticle(page), art.Author)
	return e.convert(pageURL, art, body, lay, readPolls(doc.Selection))
}

// convert cleans the body and adds its Markdown, then the polls', to art, which holds the
// page's metadata.
func (e *Extractor) convert(pageURL string, art Article, body *goquery.Selection, lay *layout, polls []poll) (Article, error) {
	// The steps rewrite the tree in place; the document is this call's own.
	root := body.Nodes[0]
	polls = placePolls(root, polls)
	cleanBody(body, baseURL(pageURL))
	// The polls follow the body in the same conversion, which has a fixed cost, after a marker
	// that tells where the body ends.
	if len(polls) > 0 {
		root.AppendChild(newElement(pollsStart))
		for _, n := range pollNodes(polls) {
			root.AppendChild(n)
		}
	}
	md, err := e.conv.ConvertNode(root, converter.WithDomain(habrRoot))
	if err != nil {
		return Article{}, fmt.Errorf("convert %s to markdown: %w", pageURL, err)
	}
	var pm []byte
	if len(polls) > 0 {
		md, pm = cutAtLine(md, pollsMark)
	}
	if md = bytes.TrimSpace(tidyLines(md)); len(md) == 0 {
		return Article{}, structural("body container %s is empty", lay.body)
	}
	if pm = bytes.TrimSpace(tidyLines(pm)); len(pm) > 0 {
		md = append(append(md, "\n\n"...), pm...)
	}
	art.Markdown = string(md) + "\n"
	return art, nil
}

// cutAtLine splits md around the first line that is exactly mark.
func cutAtLine(md []byte, mark string) (before, after []byte) {
	m := []byte(mark)
	switch {
	case bytes.Equal(md, m):
		return nil, nil
	case bytes.HasPrefix(md, append(m, '\n')):
		return nil, md[len(m)+1:]
	}
	if i := bytes.Index(md, append(append([]byte{'\n'}, m...), '\n')); i >= 0 {
		return md[:i], md[i+len(m)+2:]
	}
	if bytes.HasSuffix(md, append([]byte{'\n'}, m...)) {
		return md[:len(md)-len(m)-1], nil
	}
	return md, nil
}

const habrRoot = "https://habr.com"

// baseURL is the base for the body's relative URLs: Habr's own links are
// root-relative, and every former Habr host now redirects to habr.com.
func baseURL(pageURL string) *url.URL {
	base := &url.URL{Scheme: "https", Host: "habr.com", Path: "/"}
	if u, err := url.Parse(pageURL); err == nil && u.Path != "" {
		base.Path = u.Path
	}
	return base
}

// toUTF8 returns page as UTF-8, decoding it by the charset of contentType,
// a byte-order mark or a <meta> in its first 1024 bytes; decoded is false
// when page was valid UTF-8 and is returned as it is.
func toUTF8(page []byte, contentType string) (out []byte, decoded bool, err error) {
	if utf8.Valid(page) {
		return page, false, nil
	}
	r, err := charset.NewReader(bytes.NewReader(page), contentType)
	if err != nil {
		return nil, false, err
	}
	out, err = io.ReadAll(r)
	return out, true, err
}

// hasMarkup reports whether the document has any element besides the html,
// head and body the parser adds to every input, even plain text.
func hasMarkup(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			switch c.Data {
			case "html", "head", "body":
			default:
				return true
			}
		}
		if hasMarkup(c) {
			return true
		}
	}
	return false
}

// findBody returns the article body and the layout it was found by, or
// nil if the page has no body container of any known layout. One pass
// looks for all containers at once; a page has at most one of them.
func findBody(doc *goquery.Document) (*goquery.Selection, *layout) {
	body := doc.FindMatcher(anyBody)
	if body.Length() == 0 {
		return nil, nil
	}
	for i := range layouts {
		if body.IsMatcher(layoutSelector(layouts[i].body)) {
			return body, &layouts[i]
		}
	}
	return nil, nil // unreachable: anyBody matches only the layouts' bodies
}

var anyBody = goquery.SingleMatcher(css(bodySelectors()))

func bodySelectors() string {
	s := make([]string, len(layouts))
	for i, l := range layouts {
		s[i] = l.body
	}
	return strings.Join(s, ", ")
}

// whyNoBody explains a page without a body container: a feed or listing, a
// stub of an unavailable publication, or an unknown layout.
func whyNoBody(doc *goquery.Document) error {
	if doc.Find("rss channel, feed entry").Length() > 0 {
		return structural("an RSS or Atom feed instead of an article")
	}
	// A stub may show a few recommended articles: it is checked first.
	if reason := stubReason(doc); reason != "" {
		return structural("%s", reason)
	}
	if n := doc.Find(".tm-articles-list__item, .post_preview").Length(); n > 0 {
		return structural("a listing page with %d article previews instead of an article", n)
	}
	return structural("body container missing (looked for %s)", bodySelectors())
}
