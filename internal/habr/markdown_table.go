package habr

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
)

// Tables: GFM holds a table whose cells are single lines of inline content, one cell per
// column. The table plugin writes such tables; the renderers here keep what it cannot hold.

// renderSpannedTable writes a table with a colspan or rowspan above 1 as HTML: it runs before
// the table plugin, which would flatten merged cells into shifted ones.
func renderSpannedTable(ctx converter.Context, w converter.Writer, table *html.Node) converter.RenderStatus {
	if !hasSpan(table) {
		return converter.RenderTryNext
	}
	return renderTableHTML(ctx, w, table)
}

func hasSpan(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if c.Data == "table" {
			continue // a nested table is its own
		}
		if c.Data == "td" || c.Data == "th" {
			for _, key := range []string{"colspan", "rowspan"} {
				if v, ok := attr(c, key); ok {
					if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 1 {
						return true
					}
				}
			}
		}
		if hasSpan(c) {
			return true
		}
	}
	return false
}

// renderTableHTML writes a table that GFM cannot express as raw HTML, one row per line so that
// the Markdown stays readable as text. A newline inside a row (a <pre> in a cell, text with
// blank lines) is written as &#10;, which reads the same in HTML: a blank line would end the
// HTML block and spill the rest of the table into Markdown.
func renderTableHTML(_ converter.Context, w converter.Writer, table *html.Node) converter.RenderStatus {
	w.WriteString("\n\n<table>\n")
	for c := table.FirstChild; c != nil; c = c.NextSibling {
		switch c.Data {
		case "thead", "tbody", "tfoot":
			w.WriteString("<" + c.Data + ">\n")
			for row := c.FirstChild; row != nil; row = row.NextSibling {
				writeHTMLLine(w, row)
			}
			w.WriteString("</" + c.Data + ">\n")
		default:
			writeHTMLLine(w, c)
		}
	}
	w.WriteString("</table>\n\n")
	return converter.RenderSuccess
}

func writeHTMLLine(w converter.Writer, n *html.Node) {
	if n.Type == html.TextNode && strings.TrimSpace(n.Data) == "" {
		return
	}
	var buf bytes.Buffer
	_ = html.Render(&buf, n) // writes to memory; cannot fail
	w.Write(bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte("&#10;")))
	w.WriteString("\n")
}

// renderInlineCode writes the inline code the stock renderer gets wrong. Code with line breaks
// (editor v1 put several commands in one <code>, <br> between them) becomes one code span per
// line, joined by hard line breaks: one span would join the lines with a space, into another
// command. Code in a table cell gets its pipes escaped, as GFM requires (its tables split rows at
// unescaped pipes before reading code spans).
func renderInlineCode(_ converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	if inPre(n) {
		return converter.RenderTryNext
	}
	cell := inCell(n)
	lines := codeLines(n)
	if len(lines) == 1 && (!cell || !strings.Contains(lines[0], "|")) {
		return converter.RenderTryNext
	}
	// Empty lines have no code span to hold them: a run of breaks is one, and breaks before
	// the first line are dropped, while a break after the last one still ends its line.
	wrote, pending := false, false
	for _, line := range lines {
		code := strings.Join(strings.Fields(line), " ")
		if code == "" {
			pending = pending || wrote
			continue
		}
		if wrote {
			w.WriteString("  \n")
		}
		if cell {
			code = strings.ReplaceAll(code, "|", `\|`)
		}
		w.WriteString(codeSpan(code))
		wrote, pending = true, false
	}
	if pending {
		w.WriteString("  \n")
	}
	return converter.RenderSuccess
}

// codeLines returns the text of inline code split at its <br>s.
func codeLines(n *html.Node) []string {
	lines := []string{""}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				lines[len(lines)-1] += c.Data
			case c.Type == html.ElementNode && c.Data == "br":
				lines = append(lines, "")
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return lines
}

// codeSpan writes code as a code span, its fence one backtick longer than the longest run in
// the code.
func codeSpan(code string) string {
	longest, run := 0, 0
	for _, r := range code {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(code, "`") || strings.HasSuffix(code, "`") {
		code = " " + code + " "
	}
	return fence + code + fence
}

// inPre reports whether n is inside a <pre>.
func inPre(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && p.Data == "pre" {
			return true
		}
	}
	return false
}

// inCell reports whether n is inside a table cell and not inside a <pre>.
func inCell(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type != html.ElementNode {
			continue
		}
		switch p.Data {
		case "pre":
			return false
		case "td", "th":
			return true
		}
	}
	return false
}
