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

// images matches the images of a figure (selectors.go compiles it once).
var images = css("img")

// junk are the elements of page machinery that the cleanup drops with their content.
var junk = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "form": true,
	"button": true, "input": true, "textarea": true, "select": true,
}

// bodyParts are the elements of an article body the cleanup rewrites, each kind in document
// order. One walk finds them all: a selector per kind, each walking the whole body, cost a
// twentieth of an extraction.
type bodyParts struct {
	anchorsAndIDs []*html.Node // a:not([href]), [id]
	spoilers      []*html.Node // div.spoiler
	tex           []*html.Node // img[data-tex]
	math          []*html.Node // math
	images        []*html.Node // img
	captions      []*html.Node // figure figcaption
	embeds        []*html.Node // iframe, div.tm-iframe_temp
	code          []*html.Node // pre code[class]
	links         []*html.Node // a[href]
	all           []*html.Node // every element
}

// collect walks the children of n, dropping junk and filing every other element.
func (p *bodyParts) collect(n *html.Node, inFigure, inPre bool) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type != html.ElementNode {
			c = next
			continue
		}
		if junk[c.Data] && inPre {
			// Inside a code block it is code the author showed (HTML typed without escaping),
			// not the page's machinery: it stays as code, its tags included (an embed's
			// script too: the author shows how to embed, the reader sees that code).
			c = showAsCode(c)
			continue
		}
		if c.Data == "script" && isEmbedScript(c) {
			p.embeds = append(p.embeds, c)
			c = next
			continue
		}
		if junk[c.Data] {
			n.RemoveChild(c)
			c = next
			continue
		}
		p.all = append(p.all, c)
		_, hasHref := attr(c, "href")
		if _, hasID := attr(c, "id"); hasID || c.Data == "a" && !hasHref {
			p.anchorsAndIDs = append(p.anchorsAndIDs, c)
		}
		switch c.Data {
		case "a":
			if hasHref {
				p.links = append(p.links, c)
			}
		case "div":
			if hasClass(c, "spoiler") {
				p.spoilers = append(p.spoilers, c)
			}
			if hasClass(c, "tm-iframe_temp") {
				p.embeds = append(p.embeds, c)
			}
		case "img":
			if _, ok := attr(c, "data-tex"); ok {
				p.tex = append(p.tex, c)
			}
			p.images = append(p.images, c)
		case "math":
			p.math = append(p.math, c)
		case "figcaption":
			if inFigure {
				p.captions = append(p.captions, c)
			}
		case "iframe", "embed", "video":
			// Flash-era posts embed players with <object><embed src>; <video> plays a file.
			p.embeds = append(p.embeds, c)
		case "code":
			if _, ok := attr(c, "class"); ok && inPre {
				p.code = append(p.code, c)
			}
		}
		p.collect(c, inFigure || c.Data == "figure", inPre || c.Data == "pre")
		c = next
	}
}

// showAsCode replaces n, an element inside a code block, with text that reads as the author
// typed it, and returns the first node put in its place (the walk goes on from there): its tags
// become text around its children, which stay nodes like the rest of the block's markup. A
// script's or a style's only child is its raw text, so such an element comes back as typed.
func showAsCode(n *html.Node) *html.Node {
	parent := n.Parent
	nodes := []*html.Node{textNode(startTag(n))}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		n.RemoveChild(c)
		nodes = append(nodes, c)
		c = next
	}
	if n.Data != "input" { // the one void element among the junk
		nodes = append(nodes, textNode("</"+n.Data+">"))
	}
	for _, c := range nodes {
		parent.InsertBefore(c, n)
	}
	parent.RemoveChild(n)
	return nodes[0]
}

// startTag writes n's start tag with its attributes, each value quoted the way that needs no
// escape when there is one.
func startTag(n *html.Node) string {
	var b strings.Builder
	b.WriteString("<" + n.Data)
	for _, a := range n.Attr {
		switch {
		case !strings.Contains(a.Val, `"`):
			b.WriteString(" " + a.Key + `="` + a.Val + `"`)
		case !strings.Contains(a.Val, "'"):
			b.WriteString(" " + a.Key + `='` + a.Val + `'`)
		default:
			b.WriteString(" " + a.Key + `="` + strings.ReplaceAll(a.Val, `"`, "&quot;") + `"`)
		}
	}
	b.WriteString(">")
	return b.String()
}

// isEmbedScript reports whether a script in the body makes an embed scriptEmbed knows.
func isEmbedScript(n *html.Node) bool {
	if _, ok := attr(n, "data-telegram-post"); ok {
		return true
	}
	src, _ := attr(n, "src")
	return strings.Contains(src, "gist.github.com/")
}

// each wraps nodes in goquery selections for the cleanups written with goquery.
func each(nodes []*html.Node, fn func(*goquery.Selection)) {
	for _, n := range nodes {
		fn(&goquery.Selection{Nodes: []*html.Node{n}})
	}
}

// cleanBody rewrites the article body in place so that the converter sees
// plain, self-contained HTML: absolute URLs, real image sources, spoilers as
// <details>, formulas and embeds in a form it can render, code blocks with a
// language class it understands, and no page machinery.
func cleanBody(body *goquery.Selection, base *url.URL) {
	var p bodyParts
	p.collect(body.Nodes[0], false, false)
	targets := cleanAnchors(p.anchorsAndIDs)

	cleanSpoilers(p.spoilers)
	cleanFormulas(p.tex, p.math)
	cleanImages(p.images, base)
	cleanFigures(p.captions)
	// The links that stand for embeds are cleaned like the others.
	links := append(p.links, cleanEmbeds(p.embeds, base)...)
	cleanCode(p.code)
	cleanLinks(links, p.anchorsAndIDs, base, targets)
	finishElements(p.all)
}

// cleanSpoilers turns the legacy spoiler
//
//	<div class="spoiler"><b class="spoiler_title">T</b><div class="spoiler_text">…</div></div>
//
// into the <details><summary>T</summary>…</details> that the editor-v2 markup
// already uses and renderDetails writes out.
func cleanSpoilers(spoilers []*html.Node) {
	// Innermost first, so that a spoiler inside a spoiler is converted
	// before its parent moves it.
	for i := len(spoilers) - 1; i >= 0; i-- {
		sp := &goquery.Selection{Nodes: spoilers[i : i+1]}
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
func cleanFormulas(tex, math []*html.Node) {
	each(tex, func(img *goquery.Selection) {
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
	each(math, func(m *goquery.Selection) { m.ReplaceWithSelection(m.Contents()) })
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
func cleanImages(images []*html.Node, base *url.URL) {
	each(images, func(img *goquery.Selection) {
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
func cleanFigures(captions []*html.Node) {
	each(captions, func(fc *goquery.Selection) {
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

// cleanEmbeds replaces embedded players, which the converter would drop, by a link to what they
// show, and returns those links. Server-rendered pages carry the player as an empty
// div.tm-iframe_temp that Habr's script turns into an iframe. The link opens what the reader
// saw: the player's URL as written, parameters and all, or for YouTube the watch page of the same
// video from the same second.
func cleanEmbeds(embeds []*html.Node, base *url.URL) []*html.Node {
	var links []*html.Node
	each(embeds, func(e *goquery.Selection) {
		target, text := embedTarget(e, base)
		if target == "" {
			e.Remove()
			return
		}
		// A paragraph of its own, as the player had a line of its own.
		p, a := newElement("p"), newElement("a")
		a.Attr = []html.Attribute{{Key: "href", Val: target}}
		a.AppendChild(&html.Node{Type: html.TextNode, Data: text})
		p.AppendChild(a)
		e.ReplaceWithNodes(p)
		links = append(links, a)
	})
	return links
}

// The texts of the links that stand for embeds.
const (
	embedVideo = "Video"
	embedOther = "Embedded content"
)

// embedTarget returns the URL an embed's link opens and the link's text, or "" for an embed
// that names nothing.
func embedTarget(e *goquery.Selection, base *url.URL) (string, string) {
	if goquery.NodeName(e) == "script" {
		return scriptEmbed(e), embedOther
	}
	src := strings.TrimSpace(e.AttrOr("src", ""))
	if src == "" {
		src = strings.TrimSpace(e.AttrOr("data-src", ""))
	}
	if src == "" && goquery.NodeName(e) == "video" {
		src = strings.TrimSpace(e.Find("source[src]").First().AttrOr("src", ""))
	}
	abs := absoluteRef(base, src)
	u, err := url.Parse(abs)
	if src == "" || abs == "" || err != nil {
		return "", ""
	}
	if watch := youTubeWatch(u); watch != "" {
		return watch, embedVideo
	}
	if e.HasClass("embed_video") || goquery.NodeName(e) == "video" || isVideoHost(u.Hostname()) {
		return abs, embedVideo
	}
	return abs, embedOther
}

// youTubePlayerOnly are the YouTube player's parameters that change how it looks or behaves,
// not what it shows; a watch page has no use for them.
var youTubePlayerOnly = map[string]bool{
	"rel": true, "showinfo": true, "autoplay": true, "controls": true, "modestbranding": true,
	"enablejsapi": true, "origin": true, "feature": true, "wmode": true, "iv_load_policy": true,
	"playsinline": true, "fs": true, "cc_load_policy": true, "color": true, "disablekb": true,
	"widget_referrer": true, "hl": true, "mute": true, "loop": true, "si": true, "autohide": true,
	"theme": true, "html5": true, "version": true,
}

// youTubeWatch maps a YouTube player URL (/embed/ID) to the page a reader would open: the watch
// page of the video, starting where the player started (start= or t=, as t=), with the
// playlist and every other parameter that is not the player's own; a playlist player
// (/embed/videoseries) to the playlist's page. It returns "" for any other URL.
func youTubeWatch(u *url.URL) string {
	host := strings.TrimPrefix(strings.TrimPrefix(u.Hostname(), "www."), "m.")
	id, ok := strings.CutPrefix(u.EscapedPath(), "/embed/")
	query := u.RawQuery
	if !ok {
		// The Flash player, /v/ID, often with its parameters after an & instead of a ?.
		var rest string
		id, ok = strings.CutPrefix(u.EscapedPath(), "/v/")
		id, rest, _ = strings.Cut(id, "&")
		query = strings.Trim(rest+"&"+query, "&")
	}
	if (host != "youtube.com" && host != "youtube-nocookie.com") || !ok || id == "" || strings.Contains(id, "/") {
		return ""
	}
	var kept []string
	for _, p := range strings.Split(query, "&") {
		key, value, _ := strings.Cut(p, "=")
		switch {
		case p == "" || youTubePlayerOnly[strings.ToLower(key)]:
		case key == "start" || key == "t":
			if value != "" && value != "0" {
				kept = append(kept, "t="+value)
			}
		default:
			kept = append(kept, p)
		}
	}
	out := "https://www.youtube.com/watch?v=" + id
	if id == "videoseries" {
		out = "https://www.youtube.com/playlist?"
		if len(kept) == 0 {
			return ""
		}
		out += strings.Join(kept, "&")
	} else if len(kept) > 0 {
		out += "&" + strings.Join(kept, "&")
	}
	if u.RawFragment != "" || u.Fragment != "" {
		out += "#" + u.EscapedFragment()
	}
	return out
}

// scriptEmbed returns the page a script-made embed shows, for the two kinds authors paste: a
// GitHub gist (gist.github.com/USER/ID.js, ?file=NAME for one of its files) and a Telegram post
// (telegram-widget.js with data-telegram-post="CHANNEL/ID"); "" for any other script.
func scriptEmbed(s *goquery.Selection) string {
	if post := strings.Trim(strings.TrimSpace(s.AttrOr("data-telegram-post", "")), "/"); post != "" {
		return "https://t.me/" + post
	}
	u, err := url.Parse(strings.TrimSpace(s.AttrOr("src", "")))
	if err != nil || u.Hostname() != "gist.github.com" || !strings.HasSuffix(u.Path, ".js") {
		return ""
	}
	page := "https://gist.github.com" + strings.TrimSuffix(u.EscapedPath(), ".js")
	if file := u.Query().Get("file"); file != "" {
		// GitHub's anchor of a file in a gist: "file-" and the name as Rails' parameterize
		// writes it: lower case, each run of characters other than letters, digits, "-" and "_"
		// as one "-", none at the ends.
		page += "#file-" + strings.Trim(gistAnchor.ReplaceAllString(strings.ToLower(file), "-"), "-")
	}
	return page
}

var gistAnchor = regexp.MustCompile(`[^a-z0-9_-]+`)

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
func cleanCode(code []*html.Node) {
	each(code, func(c *goquery.Selection) {
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
func cleanAnchors(anchorsAndIDs []*html.Node) map[string]bool {
	targets := map[string]bool{}
	each(anchorsAndIDs, func(a *goquery.Selection) {
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
func cleanLinks(links, withID []*html.Node, base *url.URL, targets map[string]bool) {
	articleID, _, _ := CanonicalURL(base.String())
	linked := map[string]bool{}
	each(links, func(a *goquery.Selection) {
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
	each(withID, func(s *goquery.Selection) {
		id := strings.TrimSpace(s.AttrOr("id", ""))
		if !linked[id] || isAnchor(s) || s.Nodes[0].Parent == nil {
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
func finishElements(all []*html.Node) {
	for _, n := range all {
		if n.Parent == nil {
			continue // removed by an earlier cleanup
		}
		separateEmphasis(n)
		separateLists(n)
		kept := n.Attr[:0]
		for _, a := range n.Attr {
			if keptAttributes[a.Key] && (a.Key != "class" || classUsers[n.Data]) || a.Key == "id" && n.Data == "a" {
				kept = append(kept, a)
			}
		}
		n.Attr = kept
	}
}

func newElement(tag string) *html.Node {
	return &html.Node{Type: html.ElementNode, Data: tag, DataAtom: atom.Lookup([]byte(tag))}
}
