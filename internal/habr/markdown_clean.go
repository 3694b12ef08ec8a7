package habr

import (
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The selectors of the cleanup, compiled once (see selectors.go).
var (
	junkElements   = css("script, style, noscript, template, form, button, input, textarea, select")
	anchorsAndIDs  = css("a:not([href]), [id]")
	legacySpoilers = css("div.spoiler")
	texImages      = css("img[data-tex]")
	mathElements   = css("math")
	images         = css("img")
	figureCaptions = css("figure figcaption")
	embeds         = css("iframe, div.tm-iframe_temp")
	classedCode    = css("pre code[class]")
	links          = css("a[href]")
	anyElement     = css("*")
	withID         = css("[id]")
)

// cleanBody rewrites the article body in place so that the converter sees
// plain, self-contained HTML: absolute URLs, real image sources, spoilers as
// <details>, formulas and embeds in a form it can render, code blocks with a
// language class it understands, and no page machinery.
func cleanBody(body *goquery.Selection, base *url.URL) {
	body.FindMatcher(junkElements).Remove()
	targets := cleanAnchors(body)

	cleanSpoilers(body)
	cleanFormulas(body)
	cleanImages(body, base)
	cleanFigures(body)
	cleanEmbeds(body, base)
	cleanCode(body)
	cleanLinks(body, base, targets)
	finishElements(body)
}

// cleanSpoilers turns the legacy spoiler
//
//	<div class="spoiler"><b class="spoiler_title">T</b><div class="spoiler_text">…</div></div>
//
// into the <details><summary>T</summary>…</details> that the editor-v2 markup
// already uses and renderDetails writes out.
func cleanSpoilers(body *goquery.Selection) {
	// Innermost first, so that a spoiler inside a spoiler is converted
	// before its parent moves it.
	spoilers := body.FindMatcher(legacySpoilers)
	for i := spoilers.Length() - 1; i >= 0; i-- {
		sp := spoilers.Eq(i)
		text := sp.ChildrenFiltered(".spoiler_text")
		if text.Length() == 0 {
			continue // not a spoiler after all; its content stays as is
		}
		title := strings.TrimSpace(sp.ChildrenFiltered(".spoiler_title").First().Text())
		details := newElement("details")
		summary := newElement("summary")
		summary.AppendChild(&html.Node{Type: html.TextNode, Data: title})
		details.AppendChild(summary)
		for _, n := range text.Contents().Nodes {
			n.Parent.RemoveChild(n)
			details.AppendChild(n)
		}
		sp.ReplaceWithNodes(details)
	}
}

// cleanFormulas gives every formula image the editor-v2 form that
// renderFormula reads: <img class="formula [inline]" source="TeX">.
//
// Editor v2 already writes that. Editor v1 wrote the TeX, with its $ signs,
// into alt and marked the kind in data-tex; a display formula sat in <math>.
func cleanFormulas(body *goquery.Selection) {
	body.FindMatcher(texImages).Each(func(_ int, img *goquery.Selection) {
		if _, ok := img.Attr("source"); ok {
			return
		}
		tex := strings.Trim(strings.TrimSpace(img.AttrOr("alt", "")), "$")
		class := "formula"
		if img.AttrOr("data-tex", "") != "display" {
			class += " inline"
		}
		img.SetAttr("class", class)
		img.SetAttr("source", tex)
	})
	body.FindMatcher(mathElements).Each(func(_ int, m *goquery.Selection) { m.ReplaceWithSelection(m.Contents()) })
}

// resizedImage matches habrastorage's resizing prefix, /r/w780q1/ (the
// blurred placeholder of editor v1) or /r/w1560/ (the 2025 srcset), which
// sits in front of the path of the original image.
var resizedImage = regexp.MustCompile(`^(https?://habrastorage\.org)/r/w\d+(?:q\d+)?/`)

// webtName is the file name of an image on habrastorage's webt storage,
// which keeps it at /webt/ab/cd/ef/abcdef….ext.
var webtName = regexp.MustCompile(`^[0-9a-z_-]{27}\.(?:png|jpe?g|gif|webp)$`)

// cleanImages sets each image's src to the original picture and drops
// images that have none.
func cleanImages(body *goquery.Selection, base *url.URL) {
	body.FindMatcher(images).Each(func(_ int, img *goquery.Selection) {
		if img.HasClass("formula") {
			return
		}
		src := imageSource(img, base)
		if src == "" {
			img.Remove()
			return
		}
		img.SetAttr("src", src)
		alt := squash(img.AttrOr("alt", ""))
		img.SetAttr("alt", alt)
		if title, ok := img.Attr("title"); ok && squash(title) == alt {
			img.RemoveAttr("title")
		}
	})
}

// imageSource picks an image's real URL: the lazy-loading data-src over the
// placeholder in src, never the resized copy. A page saved by a browser
// points at local "<page>_files/<name>" copies; a webt picture can be mapped
// back to habrastorage (the mapping is checked against data-src in the
// saved-page fixture), any other local copy is unusable.
func imageSource(img *goquery.Selection, base *url.URL) string {
	for _, key := range []string{"data-src", "src"} {
		v := strings.TrimSpace(img.AttrOr(key, ""))
		if v == "" || strings.HasPrefix(v, "data:") || strings.HasSuffix(v, "/img/px.gif") || strings.HasSuffix(v, "/image-loader.svg") {
			continue
		}
		u, err := url.Parse(v)
		if err != nil {
			continue
		}
		if u.Host == "" && strings.Contains(u.Path, "_files/") {
			name := path.Base(u.Path)
			if !webtName.MatchString(name) {
				continue
			}
			return "https://habrastorage.org/webt/" + name[0:2] + "/" + name[2:4] + "/" + name[4:6] + "/" + name
		}
		return resizedImage.ReplaceAllString(absoluteRef(base, v), "$1/")
	}
	return ""
}

// cleanFigures keeps every non-empty caption as visible text: an emphasised line under the
// image. The v2 editor copies the caption into the image's alt; such an alt is dropped, since
// the caption right under the image says it, and the text would otherwise appear twice.
func cleanFigures(body *goquery.Selection) {
	body.FindMatcher(figureCaptions).Each(func(_ int, fc *goquery.Selection) {
		caption := squash(fc.Text())
		if caption == "" {
			fc.Remove()
			return
		}
		fc.Parent().FindMatcher(images).Each(func(_ int, img *goquery.Selection) {
			if squash(img.AttrOr("alt", "")) == caption {
				img.SetAttr("alt", "")
			}
		})
		p, em := newElement("p"), newElement("em")
		p.AppendChild(em)
		for _, n := range fc.Contents().Nodes {
			n.Parent.RemoveChild(n)
			em.AppendChild(n)
		}
		fc.ReplaceWithNodes(p)
	})
}

// cleanEmbeds replaces embedded players, which the converter would drop, by
// a link to what they show. Server-rendered pages carry the player as an
// empty div.tm-iframe_temp that Habr's script turns into an iframe.
func cleanEmbeds(body *goquery.Selection, base *url.URL) {
	body.FindMatcher(embeds).Each(func(_ int, e *goquery.Selection) {
		src := strings.TrimSpace(e.AttrOr("src", ""))
		if src == "" {
			src = strings.TrimSpace(e.AttrOr("data-src", ""))
		}
		u, err := url.Parse(src)
		if src == "" || err != nil {
			e.Remove()
			return
		}
		u = base.ResolveReference(u)
		text := "Embedded content"
		if watch := youTubeWatch(u); watch != nil {
			u, text = watch, "Video"
		} else if e.HasClass("embed_video") || isVideoHost(u.Hostname()) {
			text = "Video"
		}
		// A paragraph of its own, as the player had a line of its own.
		p, a := newElement("p"), newElement("a")
		a.Attr = []html.Attribute{{Key: "href", Val: u.String()}}
		a.AppendChild(&html.Node{Type: html.TextNode, Data: text})
		p.AppendChild(a)
		e.ReplaceWithNodes(p)
	})
}

// youTubeWatch maps a YouTube player URL (/embed/ID) to the page a reader
// would open, or returns nil.
func youTubeWatch(u *url.URL) *url.URL {
	host := strings.TrimPrefix(u.Hostname(), "www.")
	id, ok := strings.CutPrefix(u.Path, "/embed/")
	if (host != "youtube.com" && host != "youtube-nocookie.com") || !ok || id == "" || strings.Contains(id, "/") {
		return nil
	}
	return &url.URL{Scheme: "https", Host: "www.youtube.com", Path: "/watch", RawQuery: url.Values{"v": {id}}.Encode()}
}

func isVideoHost(host string) bool {
	host = strings.TrimPrefix(host, "www.")
	switch host {
	case "player.vimeo.com", "vimeo.com", "rutube.ru", "vk.com", "vkvideo.ru", "youtu.be":
		return true
	}
	return false
}

// cleanCode rewrites Habr's bare language class, <code class="bash hljs">,
// to the language-bash form the converter turns into a fence info string.
// "hljs" is added by highlight.js in the browser and is not a language.
func cleanCode(body *goquery.Selection) {
	body.FindMatcher(classedCode).Each(func(_ int, c *goquery.Selection) {
		var lang string
		for _, class := range strings.Fields(c.AttrOr("class", "")) {
			if class == "hljs" || strings.HasPrefix(class, "hljs-") {
				continue
			}
			lang = strings.TrimPrefix(strings.TrimPrefix(class, "language-"), "lang-")
			break
		}
		if lang == "" {
			c.RemoveAttr("class")
			return
		}
		c.SetAttr("class", "language-"+lang)
	})
}

// cleanAnchors keeps the article's own link targets, so that a table of contents keeps
// working inside the Markdown: an anchor the author placed (<a name="x"> or <a id="x">, the v2
// editor's <a class="anchor" name="x" id="x"></a> before a heading) becomes <a id="x"></a>,
// moved into the heading or paragraph that follows it; Habr's habracut marker and anchors
// without a name are unwrapped. It returns every id an in-article link may point at: those
// anchors and the ids of other elements.
func cleanAnchors(body *goquery.Selection) map[string]bool {
	targets := map[string]bool{}
	body.FindMatcher(anchorsAndIDs).Each(func(_ int, a *goquery.Selection) {
		if !isAnchor(a) {
			if id := strings.TrimSpace(a.AttrOr("id", "")); id != "" {
				targets[id] = true
			}
			return
		}
		id := strings.TrimSpace(a.AttrOr("id", ""))
		if id == "" {
			id = strings.TrimSpace(a.AttrOr("name", ""))
		}
		if id == "" || id == "habracut" {
			a.ReplaceWithSelection(a.Contents())
			return
		}
		targets[id] = true
		n := a.Nodes[0]
		n.Attr = []html.Attribute{{Key: "id", Val: id}}
		if n.FirstChild != nil {
			return // it wraps text, which stays where it is
		}
		next := n.NextSibling
		for next != nil && next.Type == html.TextNode && strings.TrimSpace(next.Data) == "" {
			next = next.NextSibling
		}
		if next != nil && next.Type == html.ElementNode && anchorHosts[next.DataAtom] {
			n.Parent.RemoveChild(n)
			next.InsertBefore(n, next.FirstChild)
		}
	})
	return targets
}

func isAnchor(s *goquery.Selection) bool {
	_, href := s.Attr("href")
	return goquery.NodeName(s) == "a" && !href
}

// anchorHosts are the blocks an anchor standing right before them is moved into.
var anchorHosts = map[atom.Atom]bool{
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.P: true,
}

// cleanLinks writes every link's URL as the author wrote it, made absolute by string
// operations and without utm_* tracking parameters; a link to one of the article's own targets
// (a bare "#x", or this article's URL with "#x") becomes "#x", with an <a id> placed at an
// element that has the id but is no anchor. A link that cannot be followed (javascript:,
// unparseable) keeps its text only.
func cleanLinks(body *goquery.Selection, base *url.URL, targets map[string]bool) {
	articleID, _, _ := CanonicalURL(base.String())
	linked := map[string]bool{}
	body.FindMatcher(links).Each(func(_ int, a *goquery.Selection) {
		ref := strings.TrimSpace(a.AttrOr("href", ""))
		if frag, ok := ownFragment(ref, articleID); ok && targets[frag] {
			a.SetAttr("href", "#"+frag)
			linked[frag] = true
			return
		}
		abs := absoluteRef(base, ref)
		u, err := url.Parse(abs)
		if abs == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
			a.ReplaceWithSelection(a.Contents())
			return
		}
		if u.Scheme != "mailto" {
			abs = withoutTracking(abs)
		}
		a.SetAttr("href", abs)
	})
	// An element that carries a linked id (a heading with an id) gets an anchor of its own,
	// since the cleanup drops ids.
	if len(linked) == 0 {
		return
	}
	body.FindMatcher(withID).Each(func(_ int, s *goquery.Selection) {
		id := strings.TrimSpace(s.AttrOr("id", ""))
		if !linked[id] || isAnchor(s) {
			return
		}
		anchor := newElement("a")
		anchor.Attr = []html.Attribute{{Key: "id", Val: id}}
		s.Nodes[0].InsertBefore(anchor, s.Nodes[0].FirstChild)
	})
}

// ownFragment returns the fragment of a link to the article itself: "#x", or any URL of this
// article (by its id) with "#x". Fragments compare unescaped.
func ownFragment(ref string, articleID int64) (string, bool) {
	rest, frag, ok := strings.Cut(ref, "#")
	if !ok || frag == "" {
		return "", false
	}
	if rest != "" {
		if id, _, err := CanonicalURL(absoluteRef(&url.URL{Scheme: "https", Host: canonicalHost, Path: "/"}, rest)); err != nil || id != articleID || articleID == 0 {
			return "", false
		}
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	return frag, true
}

// emphasisKind is "bold" for <strong> and <b>, "italic" for <em> and <i>, "" otherwise.
func emphasisKind(n *html.Node) string {
	if n == nil || n.Type != html.ElementNode {
		return ""
	}
	switch n.DataAtom {
	case atom.Strong, atom.B:
		return "bold"
	case atom.Em, atom.I:
		return "italic"
	}
	return ""
}

// separateEmphasis keeps adjacent emphasis runs of different kinds apart. html-to-markdown
// merges an emphasis element with the bold or italic elements right after it, whatever their
// kind (domutils.MergeAdjacent), so <strong><em>X</em></strong><em> tail</em> became
// "***X* tail**", turning the tail bold. An empty text node between them stops the merge; runs
// of the same kind still merge, which reads the same.
func separateEmphasis(n *html.Node) {
	kind := emphasisKind(n)
	if kind == "" {
		return
	}
	next := n.NextSibling
	for next != nil && next.Type == html.ElementNode && next.DataAtom == atom.Span && next.FirstChild != nil {
		next = next.FirstChild // the converter looks through spans
	}
	if k := emphasisKind(next); k != "" && k != kind {
		n.Parent.InsertBefore(&html.Node{Type: html.TextNode}, n.NextSibling)
	}
}

// separateLists marks a list that is followed directly by another list (white space aside), so
// that renderListEnd keeps them apart.
func separateLists(n *html.Node) {
	if n.DataAtom != atom.Ul && n.DataAtom != atom.Ol {
		return
	}
	next := n.NextSibling
	for next != nil && next.Type == html.TextNode && strings.TrimSpace(next.Data) == "" {
		next = next.NextSibling
	}
	if next != nil && next.Type == html.ElementNode && (next.DataAtom == atom.Ul || next.DataAtom == atom.Ol) {
		n.Parent.InsertBefore(newElement(listEnd), n.NextSibling)
	}
}

// keptAttributes are the attributes that carry content. Everything else
// (ids, styles, widths, data-*, Vue's data-v-*) would only clutter the
// tables that stay raw HTML.
var keptAttributes = map[string]bool{
	"href": true, "src": true, "alt": true, "title": true,
	"colspan": true, "rowspan": true, "source": true, "class": true, "start": true,
}

// classUsers are the elements whose class the converter still reads: the
// code language and the formula marker.
var classUsers = map[string]bool{"code": true, "pre": true, "img": true}

// finishElements makes the last changes every element needs, in one walk over the body:
// emphasis and list separation, and the attributes the converter reads, nothing else.
func finishElements(body *goquery.Selection) {
	body.FindMatcher(anyElement).Each(func(_ int, s *goquery.Selection) {
		n := s.Nodes[0]
		separateEmphasis(n)
		separateLists(n)
		kept := n.Attr[:0]
		for _, a := range n.Attr {
			if keptAttributes[a.Key] && (a.Key != "class" || classUsers[n.Data]) || a.Key == "id" && n.Data == "a" {
				kept = append(kept, a)
			}
		}
		n.Attr = kept
	})
}

func newElement(tag string) *html.Node {
	return &html.Node{Type: html.ElementNode, Data: tag, DataAtom: atom.Lookup([]byte(tag))}
}
