package habr

import (
	"bytes"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
)

// newConverter builds the one html-to-markdown converter an Extractor uses
// for every page. It expects a body already normalised by cleanBody: the
// renderers below only cover what the stock plugins cannot express.
func newConverter() *converter.Converter {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			commonmark.WithHeadingStyle(commonmark.HeadingStyleATX),
			commonmark.WithCodeBlockFence("```"),
			commonmark.WithBulletListMarker("-"),
			commonmark.WithHorizontalRule("---"),
			// The plugin's marker comment also lands between lists that
			// are not siblings (a list in a quote and one after it);
			// separateLists puts one only where two lists are adjacent.
			commonmark.WithListEndComment(false),
		),
		// Habr tables have no <thead>: the first row is the header.
		// A cell with line breaks or blocks cannot be a GFM cell; such
		// tables fall through to renderTableHTML below.
		table.NewTablePlugin(
			table.WithHeaderPromotion(true),
			table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal),
		),
		strikethrough.NewStrikethroughPlugin(),
	))
	conv.Register.EscapedChar('~')
	conv.Register.TextTransformer(escapeTextEntities, converter.PriorityEarly)
	conv.Register.UnEscaper(unescape, converter.PriorityEarly)
	for _, tag := range blockTags {
		conv.Register.TagType(tag, converter.TagTypeBlock, converter.PriorityEarly)
	}
	for _, tag := range inlineTags {
		conv.Register.TagType(tag, converter.TagTypeInline, converter.PriorityEarly)
	}
	conv.Register.Renderer(renderEarly, converter.PriorityEarly)
	// After the table plugin, which declines a table with line breaks or blocks in a cell.
	conv.Register.RendererFor("table", converter.TagTypeBlock, renderTableHTML, converter.PriorityStandard+1)
	conv.Register.PostRenderer(blankWhitespaceLines, converter.PriorityStandard-1)
	return conv
}

// earlyRenderers are this package's renderers, tried before the plugins'. They are dispatched
// by one handler (renderEarly): html-to-markdown copies and sorts its list of render handlers
// for every node it renders, so each handler registered costs on every node of every page.
var earlyRenderers = map[string]converter.HandleRenderFunc{
	"blockquote": renderBlockquote, // markdown_escape.go
	"details":    renderDetails,
	listEnd:      renderListEnd,
	pollsStart:   renderPollsStart, // article_poll.go
	taskBox:      renderTaskBox,
	"table":      renderSpannedTable, // markdown_table.go
	"code":       renderInlineCode,   // markdown_table.go
	"a":          renderLink,         // markdown_link.go
	"img":        renderImage,
	"sup":        renderInlineHTML, // markdown_inline.go
	"sub":        renderInlineHTML,
	"kbd":        renderInlineHTML,
	"mark":       renderInlineHTML,
	"abbr":       renderInlineHTML,
}

// The kinds of the tags of earlyRenderers, which the converter needs for the ones it does not
// know and its whitespace handling.
var (
	blockTags  = []string{"blockquote", "details", listEnd, pollsStart, "table"}
	inlineTags = []string{taskBox, "code", "a", "img", "sup", "sub", "kbd", "mark", "abbr"}
)

func renderEarly(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if n.Type != html.ElementNode {
		return converter.RenderTryNext
	}
	if fn, ok := earlyRenderers[n.Data]; ok {
		return fn(ctx, w, n)
	}
	return converter.RenderTryNext
}

// blankWhitespaceLines empties lines that hold only spaces, such as the one
// the converter puts between a list item and its nested list, so that the
// text carries no invisible trailing space.
//
// It runs before the commonmark plugin restores the newlines of code
// blocks (at PriorityLate): code cannot be touched, since at this point
// each code block is still a single line.
func blankWhitespaceLines(_ converter.Context, md []byte) []byte {
	lines := bytes.Split(md, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimLeft(l, " \t")) == 0 {
			lines[i] = nil
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// listEnd is the element separateLists puts between two adjacent lists.
const listEnd = "ingest-list-end"

// renderListEnd writes an empty HTML comment between two adjacent lists: without it, Markdown
// reads them as one list, and the second one's start number (or kind of marker) is lost.
func renderListEnd(_ converter.Context, w converter.Writer, _ *html.Node) converter.RenderStatus {
	w.WriteString("\n\n<!-- -->\n\n")
	return converter.RenderSuccess
}

// renderDetails writes a spoiler as an HTML <details> block with Markdown
// inside. The blank lines around the content let CommonMark parse it as
// Markdown; renderers such as GitHub's show it folded, as on Habr, and a
// plain-text reader sees exactly where the spoiler starts and ends.
func renderDetails(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	var (
		title   string
		content []*html.Node
	)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "summary" && title == "" {
			title = squash(textOf(c))
			continue
		}
		content = append(content, c)
	}
	w.WriteString("\n\n<details>\n")
	if title != "" {
		w.WriteString("<summary>" + htmlText.Replace(title) + "</summary>\n")
	}
	w.WriteString("\n")
	ctx.RenderNodes(ctx, w, content...)
	w.WriteString("\n\n</details>\n\n")
	return converter.RenderSuccess
}

// htmlText escapes text for an HTML context without the &#34; clutter of
// html.EscapeString.
var htmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// renderFormula writes a formula image as TeX: $…$ inline, $$…$$ on its own
// lines for a display formula. cleanBody has put the TeX into the "source"
// attribute and marked inline formulas; every other image is left to the
// commonmark renderer.
func renderFormula(_ converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if !hasClass(n, "formula") {
		return converter.RenderTryNext
	}
	tex, ok := attr(n, "source")
	tex = strings.TrimSpace(tex)
	if !ok || tex == "" {
		return converter.RenderTryNext
	}
	if hasClass(n, "inline") {
		w.WriteString("$" + inCellText(squash(tex), inCell(n)) + "$") // |x| in a cell
		return converter.RenderSuccess
	}
	w.WriteString("\n\n$$\n" + tex + "\n$$\n\n")
	return converter.RenderSuccess
}

func textOf(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(textOf(c))
	}
	return b.String()
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attr(n, "class")
	for _, c := range strings.Fields(v) {
		if c == class {
			return true
		}
	}
	return false
}
