package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// shownMax is the most a screen shows of one reason, name or other value from the database or
// the command line: a record's error, a person's --by, a caption.
const shownMax = 300

// shown is s as a text screen (ingest show, the status screens) prints a value in a line: every
// control character visible (\x1b, \n, \r, \t: a reason pasted from a terminal or a portal's
// text must neither drive the terminal nor break the table) and at most shownMax runes, the
// cut said with its whole length. --json prints the values exactly: JSON escapes them itself.
func shown(s string) string { return shownCut(s, shownMax) }

// shownCut is shown with a tighter cap, for a column of a table.
func shownCut(s string, max int) string { return screenText(s, false, max) }

// shownBlock is a multi-line body (a publication's Markdown) as a screen prints it: its lines
// and tabs kept, every other control character visible, nothing cut.
func shownBlock(s string) string { return screenText(s, true, 0) }

// screenText escapes s for a terminal; max > 0 cuts it after max runes of escaped text.
func screenText(s string, keepLines bool, max int) string {
	var b strings.Builder
	runes, cut := 0, -1 // cut: the length of b where the text stops when it is too long
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		unit := escapeRune(r, size, s[i], keepLines)
		runes += utf8.RuneCountInString(unit)
		if max > 0 && runes > max-1 && cut < 0 {
			cut = b.Len() // the ellipsis takes the last place
		}
		if max > 0 && runes > max {
			return b.String()[:cut] + fmt.Sprintf("… (%d characters in all)", utf8.RuneCountInString(s))
		}
		b.WriteString(unit)
	}
	return b.String()
}

// escapeRune is one rune as a screen shows it: itself, or an escape naming it.
func escapeRune(r rune, size int, first byte, keepLines bool) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return fmt.Sprintf(`\x%02x`, first) // a byte that is not UTF-8
	case keepLines && (r == '\n' || r == '\t'):
		return string(r)
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r == '\t':
		return `\t`
	case r < 0x80 && unicode.IsControl(r):
		return fmt.Sprintf(`\x%02x`, r)
	case unicode.IsControl(r), isBidiControl(r), r == '\u2028', r == '\u2029':
		// C1 controls, and the bidirectional overrides that make a terminal show text in an
		// order other than its own; line and paragraph separators.
		return fmt.Sprintf(`\u%04x`, r)
	}
	return string(r)
}

// isBidiControl reports the explicit bidirectional formatting characters (embeddings,
// overrides, isolates).
func isBidiControl(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') || r == '\u200e' || r == '\u200f' || r == '\u061c'
}
