package habr

import (
	"bytes"
	"strings"
	"unicode"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
)

// renderInlineHTML writes the inline elements Markdown has no syntax for but whose markup
// carries meaning (sup, sub, kbd, mark, abbr; see earlyRenderers): x<sup>2</sup> must not read
// as x2, a key is not code, a highlight or an abbreviation's expansion is part of the text. It
// writes <tag>content</tag> around Markdown content (escaped and formatted like any text),
// which CommonMark renders as written, with the white space around the content outside the
// tags and an abbreviation's title; an element without content is dropped.
func renderInlineHTML(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	var buf bytes.Buffer
	ctx.RenderChildNodes(ctx, &buf, n)
	content := buf.Bytes()
	trimmed := bytes.TrimRightFunc(content, unicode.IsSpace)
	after := content[len(trimmed):]
	inner := bytes.TrimLeftFunc(trimmed, unicode.IsSpace)
	before := trimmed[:len(trimmed)-len(inner)]
	w.Write(before)
	if len(inner) > 0 {
		w.WriteString("<" + n.Data)
		if title, ok := attr(n, "title"); ok && n.Data == "abbr" && strings.TrimSpace(title) != "" {
			w.WriteString(` title="` + attrText(strings.Join(strings.Fields(title), " "), inCell(n)) + `"`)
		}
		w.WriteString(">")
		w.Write(inner)
		w.WriteString("</" + n.Data + ">")
	}
	w.Write(after)
	return converter.RenderSuccess
}

// attrText escapes text for an HTML attribute this package writes, with a pipe as "&#124;" in a
// GFM table cell, which its pipes would split.
func attrText(s string, cell bool) string {
	s = html.EscapeString(s)
	if cell {
		s = strings.ReplaceAll(s, "|", "&#124;")
	}
	return s
}
