package habr

import (
	"bytes"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/marker"
	"golang.org/x/net/html"
)

// The converter escapes Markdown characters in text in two steps: while rendering, each one is
// marked with a placeholder byte; at the end, "unescapers" look at each marked character in its
// context and keep the backslash only where the character would otherwise be read as Markdown.
// The stock unescapers miss some contexts; the ones here are consulted first.

// placeholder marks a character of text that may need a backslash (see converter/escape.go).
var placeholder = marker.BytesMarkerEscaping[0]

// unescape is this package's unescaper: escapeDelimiter, then escapeAlways. One handler, since
// html-to-markdown copies and sorts its list of unescapers for every character it checks.
func unescape(chars []byte, index int) int {
	if skip := escapeDelimiter(chars, index); skip != -1 {
		return skip
	}
	return escapeAlways(chars, index)
}

// escapeTextEntities is a text transformer, run before the converter's own: an author writing
// about HTML types "&mdash;" (the page holds "&amp;mdash;"), and written as it is, every
// renderer shows "—". Such an & is written "&amp;". It cannot be left to an unescaper, as the
// other characters are: the converter writes a literal "<" or ">" as "&lt;" or "&gt;" before
// escaping, and the & of those must stay as it is.
func escapeTextEntities(_ converter.Context, text string) string {
	return escapeEntities(text)
}

// maxEntityLen is the length of the longest reference isEntity accepts ("&" + 32 + ";").
const maxEntityLen = 34

// entityRef matches the form of a CommonMark entity or numeric character reference.
var entityRef = regexp.MustCompile(`^&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});$`)

// isEntity reports whether ref, "&…;", is a reference Markdown replaces by a character: any
// numeric one, and a named one HTML knows (CommonMark takes HTML5's list; "&foo;" stays text).
func isEntity(ref string) bool {
	if !entityRef.MatchString(ref) {
		return false
	}
	return ref[1] == '#' || html.UnescapeString(ref) != ref
}

// escapeEntities writes each & of s that starts a reference Markdown would read (see isEntity)
// as "&amp;": in text, and in what this package writes itself (URLs, titles, alt texts), where
// Markdown reads references too.
func escapeEntities(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '&' {
			end := strings.IndexByte(s[i:min(len(s), i+maxEntityLen)], ';')
			if end > 0 && isEntity(s[i:i+end+1]) {
				b.WriteString("&amp;")
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// escapeDelimiter keeps the backslash of a literal *, _ or ~ that could open or close emphasis
// or strikethrough. The stock rule escapes only * and _ followed by a non-space, those that could
// open; but "произвольные* фотографии" inside emphasis closes it early, and GFM strikes through
// "~5 и ~10". Only a delimiter with white space on both sides can do neither.
func escapeDelimiter(chars []byte, index int) int {
	c := chars[index]
	if c != '*' && c != '_' && c != '~' {
		return -1
	}
	prev, next := prevRune(chars, index), nextRune(chars, index)
	if (prev == 0 || unicode.IsSpace(prev)) && (next == 0 || unicode.IsSpace(next)) {
		return -1
	}
	return 1
}

// escapeAlways keeps the backslash of every literal $ and |: formulas are stored as $…$, so a
// price in prose would read as TeX to a math-aware renderer; and lines of text starting with or
// holding pipes (a table drawn in text with <br>s) would read as a GFM table.
func escapeAlways(chars []byte, index int) int {
	switch chars[index] {
	case '$', '|':
		return 1
	}
	return -1
}

// prevRune returns the rune before index, skipping placeholders; 0 at the start.
func prevRune(chars []byte, index int) rune {
	for i := index - 1; i >= 0; i-- {
		if chars[i] == placeholder {
			continue
		}
		r, _ := utf8.DecodeLastRune(chars[:i+1])
		return r
	}
	return 0
}

// nextRune returns the rune after index, skipping placeholders; 0 at the end.
func nextRune(chars []byte, index int) rune {
	for i := index + 1; i < len(chars); i++ {
		if chars[i] == placeholder {
			continue
		}
		r, _ := utf8.DecodeRune(chars[i:])
		return r
	}
	return 0
}

// renderBlockquote writes a blockquote like the stock renderer, with three differences that
// make its content read the same at any depth:
//
//   - the content's escapes are decided before the "> " prefixes are added, as the list
//     renderer does for its items: otherwise a quoted paragraph starting with "* ", "1984. ",
//     "# " or "> " is taken for being in mid-line and left unescaped, and becomes a list, a
//     heading or a nested quote;
//   - the lines of code blocks get the prefix too (html-to-markdown issue #183): a code block's
//     newlines are still placeholders at this point, restored only at the very end;
//   - an empty line gets ">" without a trailing space.
func renderBlockquote(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	var buf bytes.Buffer
	ctx.RenderChildNodes(ctx, &buf, n)
	content := bytes.TrimSpace(buf.Bytes())
	if len(content) == 0 {
		return converter.RenderSuccess
	}
	content = ctx.UnEscapeContent(collapseBlankLines(content))
	codeNewline := marker.BytesMarkerCodeBlockNewline
	content = bytes.ReplaceAll(content, codeNewline, append(append([]byte{}, codeNewline...), "> "...))
	w.WriteString("\n\n")
	lines := bytes.Split(content, []byte("\n"))
	for i, line := range lines {
		if i > 0 {
			w.WriteString("\n")
		}
		if len(bytes.TrimSpace(line)) == 0 {
			w.WriteString(">")
			continue
		}
		if i == len(lines)-1 || len(bytes.TrimSpace(lines[i+1])) == 0 {
			line = bytes.TrimRight(line, " ") // a hard break that ends a paragraph breaks nothing
		}
		w.WriteString("> ")
		w.Write(line)
	}
	w.WriteString("\n\n")
	return converter.RenderSuccess
}

// collapseBlankLines turns every run of blank (or white-space only) lines into one empty line.
func collapseBlankLines(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	out := make([][]byte, 0, len(lines))
	blank := false
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			if !blank {
				out = append(out, nil)
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}
