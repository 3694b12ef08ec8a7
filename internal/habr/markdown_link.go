package habr

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
)

// Links and images are written with the URL exactly as the cleanup left it: the stock
// renderers pass every URL through net/url, which re-encodes it ("?:language=" becomes
// "?%3Alanguage=", "+" becomes "%20", a Cyrillic path is percent-encoded), so the stored link
// was no longer the one the author wrote. The cleanup has already made each URL absolute (or a
// fragment of the article itself) and dropped tracking parameters, by string operations.

// insideLink is the converter's own context key: its commonmark plugin escapes "]" in text while
// it is set.
var insideLink any = "is_inside_link"

// renderLink writes <a href> as an inline link, and an in-article anchor (<a id>, left by the
// cleanup) as inline HTML that fragment links can point at.
func renderLink(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	href, hasHref := attr(n, "href")
	if !hasHref {
		id, ok := attr(n, "id")
		if !ok {
			return converter.RenderTryNext
		}
		w.WriteString(`<a id="` + attrText(id, inCell(n)) + `"></a>`)
		ctx.RenderChildNodes(ctx, w, n)
		return converter.RenderSuccess
	}
	var buf bytes.Buffer
	ctx.RenderChildNodes(ctx.WithValue(insideLink, true), &buf, n)
	content := buf.Bytes()
	trimmed := bytes.TrimRightFunc(content, unicode.IsSpace)
	after := content[len(trimmed):]
	text := bytes.TrimLeftFunc(trimmed, unicode.IsSpace)
	before := trimmed[:len(trimmed)-len(text)]

	cell := inCell(n)
	w.Write(before)
	w.WriteString("[")
	w.Write(multiLineLinkText(text))
	w.WriteString("](" + inCellText(destination(href), cell))
	if title, ok := attr(n, "title"); ok && strings.TrimSpace(title) != "" {
		w.WriteString(" " + inCellText(linkTitle(title), cell))
	}
	w.WriteString(")")
	w.Write(after)
	return converter.RenderSuccess
}

// inCellText escapes the pipes of what a link or image writes itself (URL, title, alt) in a
// table cell: GFM splits a row into cells at every unescaped pipe before it reads any link, so
// "[wiki](https://wiki.example/?q=a|b)" would end the cell in mid-URL. It reads "\|" as "|"
// again inside the cell, in a URL too.
func inCellText(s string, cell bool) string {
	if !cell {
		return s
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// renderImage writes a formula as TeX (see renderFormula) and any other image as a Markdown
// image with its URL as the cleanup left it.
func renderImage(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if status := renderFormula(ctx, w, n); status == converter.RenderSuccess {
		return status
	}
	src, _ := attr(n, "src")
	if src = strings.TrimSpace(src); src == "" {
		return converter.RenderTryNext
	}
	alt, _ := attr(n, "alt")
	alt = escapeEntities(altText.Replace(alt))
	cell := inCell(n)
	w.WriteString("![" + inCellText(alt, cell) + "](" + inCellText(destination(src), cell))
	if title, ok := attr(n, "title"); ok && strings.TrimSpace(title) != "" {
		w.WriteString(" " + inCellText(linkTitle(title), cell))
	}
	w.WriteString(")")
	return converter.RenderSuccess
}

// altText escapes an image's alt text for the brackets around it.
var altText = strings.NewReplacer("\n", " ", "[", `\[`, "]", `\]`)

// multiLineLinkText keeps a link whose text spans lines one link: blank lines would end it, so
// every line break inside becomes a hard break.
func multiLineLinkText(text []byte) []byte {
	parts := bytes.Split(text, []byte("\n"))
	if len(parts) == 1 {
		return text
	}
	out := make([]byte, 0, len(text)+8)
	for i, p := range parts {
		p = bytes.TrimLeftFunc(p, unicode.IsSpace)
		switch {
		case len(p) == 0:
			out = append(out, "\\\n"...)
		case i == len(parts)-1:
			out = append(out, p...)
		case bytes.HasSuffix(p, []byte("  ")):
			out = append(append(out, p...), '\n')
		default:
			out = append(append(out, p...), "  \n"...)
		}
	}
	return out
}

// destination writes a URL as a Markdown link destination, unchanged where Markdown allows:
// in <…> when it holds white space, angle brackets or unbalanced parentheses, and with a
// backslash before an & that would read as a character reference.
func destination(u string) string {
	u = escapeEntities(urlBreakers.Replace(u))
	depth, balanced := 0, true
	for _, r := range u {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			balanced = balanced && depth >= 0
		}
	}
	if balanced && depth == 0 && !strings.ContainsAny(u, " \t<>") {
		return u
	}
	return "<" + angleBrackets.Replace(u) + ">"
}

var (
	// urlBreakers are what a Markdown destination cannot hold even in <…>; a backslash would
	// escape the next character (and browsers read it as "/" in a URL anyway).
	urlBreakers   = strings.NewReplacer("\n", "%0A", "\r", "%0D", `\`, "%5C")
	angleBrackets = strings.NewReplacer("<", `\<`, ">", `\>`)
)

// linkTitle quotes a link or image title.
func linkTitle(title string) string {
	title = escapeEntities(strings.Join(strings.Fields(title), " "))
	switch {
	case strings.Contains(title, `"`) && strings.Contains(title, "'"):
		return `"` + strings.ReplaceAll(title, `"`, `\"`) + `"`
	case strings.Contains(title, `"`):
		return "'" + title + "'"
	}
	return `"` + title + `"`
}

// hasScheme matches a URL that starts with a scheme.
var hasScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// absoluteRef returns ref, as written in the page, as an absolute URL against base (the page's
// URL on habr.com): Habr's own links are root-relative, and some are protocol-relative. Only
// the rare path-relative reference goes through net/url. It returns "" for a reference that
// cannot be parsed.
func absoluteRef(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	switch {
	case hasScheme.MatchString(ref):
		return ref
	case strings.HasPrefix(ref, "//"):
		return "https:" + ref
	case strings.HasPrefix(ref, "/"):
		return habrRoot + ref
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	return base.ResolveReference(u).String()
}

// withoutTracking drops the utm_* parameters from an http(s) URL's query, leaving the rest of
// the URL as written.
func withoutTracking(u string) string {
	rest, fragment, hasFragment := strings.Cut(u, "#")
	path, query, hasQuery := strings.Cut(rest, "?")
	if !hasQuery {
		return u
	}
	var kept []string
	for _, p := range strings.Split(query, "&") {
		key, _, _ := strings.Cut(p, "=")
		if !strings.HasPrefix(strings.ToLower(key), "utm_") {
			kept = append(kept, p)
		}
	}
	out := path
	if len(kept) > 0 {
		out += "?" + strings.Join(kept, "&")
	}
	if hasFragment {
		out += "#" + fragment
	}
	return out
}
