package habr

import (
	"bytes"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// The fast path exists because building the tree of a whole Habr page cost
// up to twenty times the conversion of its body: the article takes 5-15% of
// the page, and the comments, sidebars and scripts after it are the rest.
// Every layout keeps the article with its title, author, hubs, tags and
// time in the page's first <article> element (the 2019 mobile site shows
// the hubs in a block right before it), and the time and og:title in the
// head's <meta> tags. So the fast path parses only those <meta> tags and
// the article element, and runs the same findBody, readMeta and convert on
// that small document.
//
// It declines, and the whole page is parsed instead, whenever it is not
// sure to see what the whole-page parse would see: markup it does not
// follow before the article (see scanPrefix), an article that is not one
// well-formed element, no body container in it, or missing metadata. Pages
// without an article (stubs, listings, feeds) therefore always take the
// whole-page path, which explains them.

// extractFast returns the article of page if the fast path is sure of it. With checkUTF8, page
// is still undecoded, and the fast path declines unless the bytes it parses are valid UTF-8.
func (e *Extractor) extractFast(pageURL string, page []byte, checkUTF8 bool) (Article, bool) {
	doc, reg, ok := articleDoc(page, checkUTF8)
	if !ok {
		return Article{}, false
	}
	after := afterOffset(page, reg.end)
	if pollAfter(after) {
		return Article{}, false // a poll after the article is outside what the fast path reads
	}
	d := goquery.NewDocumentFromNode(doc)
	body, lay := findBody(d)
	if body == nil {
		return Article{}, false
	}
	art := readMeta(d, lay, reg.origin)
	if art.Title == "" || art.Author == "" || len(art.Hubs) == 0 && art.Company == (Company{}) {
		// Perhaps the page shows it elsewhere, such as og:title.
		return Article{}, false
	}
	art.AuthorName = authorName(after, art.Author)
	if checkUTF8 && !utf8.ValidString(art.AuthorName) {
		return Article{}, false // decoding would have replaced those bytes
	}
	var polls []poll
	if reg.poll {
		polls = readPolls(d.Selection)
	}
	art, err := e.convert(pageURL, art, body, lay, polls)
	if err != nil {
		return Article{}, false
	}
	return art, true
}

// region is what articleDoc learns of the article's bytes: where the article ends, and whether
// its bytes name a poll or a translation's origin at all (the selectors that find them then
// need not walk the document when they cannot match).
type region struct {
	end          int
	poll, origin bool
}

// articleEnd closes the page's first <article>. The Habr layouts nest no
// article in another, so the first one closes it; articleDoc checks that.
const articleEnd = "</article>"

// regionEnd follows the article in the small document: a comment, then a
// text. Only if the article is closed exactly where the region ends does the
// comment come out as a child of <body>; anywhere else (an article nested in
// the article, a region ending inside a comment, a script or an attribute)
// it is swallowed. And only if no formatting element (<a>, <b>, ...) was
// left open in the article does the text follow it bare: the parser reopens
// such elements around the next text, as it would around whatever follows
// the article on the whole page.
const (
	regionEndComment = "end of article"
	regionEndText    = "end"
	regionEnd        = "<!--" + regionEndComment + "-->" + regionEndText
)

// articleDoc parses the head's <meta> tags and the page's first article
// into a document of their own, or reports that it cannot be sure to.
// With checkUTF8 it declines if what it would parse is not valid UTF-8.
func articleDoc(page []byte, checkUTF8 bool) (*html.Node, region, bool) {
	pre, ok := scanPrefix(page)
	if !ok {
		return nil, region{}, false
	}
	start := pre.article
	if pre.hubs >= 0 {
		start = pre.hubs
	}
	n := bytes.Index(page[pre.article:], []byte(articleEnd))
	if n < 0 {
		return nil, region{}, false
	}
	end := pre.article + n + len(articleEnd)
	art := page[start:end]
	reg := region{end: end, poll: bytes.Contains(art, []byte("poll")), origin: mayHaveOrigin(art)}

	var buf bytes.Buffer
	buf.Grow(len(art) + len(regionEnd) + 4096)
	for _, m := range pre.metas {
		buf.Write(page[m[0]:m[1]])
	}
	buf.Write(art)
	buf.WriteString(regionEnd)
	if checkUTF8 && !utf8.Valid(buf.Bytes()) {
		return nil, region{}, false
	}
	doc, err := html.Parse(&buf)
	if err != nil || !wellFormedRegion(doc, pre.hubs >= 0) {
		return nil, region{}, false
	}
	return doc, reg, true
}

// wellFormedRegion reports whether the body of doc holds the article (and
// the hubs block before it if withHubs), then the regionEnd comment and
// text, and nothing else but white space.
func wellFormedRegion(doc *html.Node, withHubs bool) bool {
	body := findElement(doc, "body")
	if body == nil {
		return false
	}
	var want []string
	if withHubs {
		want = append(want, "div")
	}
	want = append(want, "article")
	text := body.LastChild
	if text == nil || text.Type != html.TextNode || text.Data != regionEndText {
		return false
	}
	last := text.PrevSibling
	if last == nil || last.Type != html.CommentNode || last.Data != regionEndComment {
		return false
	}
	for c := body.FirstChild; c != last; c = c.NextSibling {
		switch {
		case c.Type == html.TextNode && len(bytes.TrimSpace([]byte(c.Data))) == 0:
		case c.Type == html.ElementNode && len(want) > 0 && c.Data == want[0]:
			want = want[1:]
		default:
			return false
		}
	}
	return len(want) == 0
}

// findElement returns the first element named tag in n, depth first.
func findElement(n *html.Node, tag string) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == tag {
			return c
		}
		if f := findElement(c, tag); f != nil {
			return f
		}
	}
	return nil
}
