package habr

import (
	"bytes"
	"regexp"
	"strings"
)

// tidyLines is the last pass over the Markdown: no line outside a code block (or a raw HTML
// table, which may hold a <pre>) ends in white space. Habr's bodies end paragraphs in &nbsp;
// (U+00A0) and the converter ends hard line breaks in two spaces; invisible as they are, both
// are noise to every tool that reads the text, and a trailing U+00A0 does not even work as a
// break. A hard break that continues its paragraph becomes a backslash, the visible form;
// one that ends its paragraph (or list item) breaks nothing and is dropped.
func tidyLines(md []byte) []byte {
	var out []byte   // nil while no line has changed: most pages need few changes
	var fence []byte // the open code fence, nil outside code
	inTable := false
	for start := 0; start <= len(md); {
		end := bytes.IndexByte(md[start:], '\n')
		if end < 0 {
			end = len(md)
		} else {
			end += start
		}
		line := md[start:end]
		fixed := line
		content := bytes.TrimLeft(line, "> ") // inside its blockquotes and list indentation
		switch {
		case fence != nil:
			if isFenceClose(content, fence) {
				fence = nil
			} else if len(line) > 0 && len(bytes.ReplaceAll(line, []byte("> "), nil)) == 0 {
				// An empty code line in a blockquote: its prefix, without the optional space.
				fixed = bytes.TrimRight(line, " ")
			}
		case inTable:
			inTable = !bytes.HasPrefix(content, []byte("</table>"))
		case len(content) > 0 && strings.IndexByte("`~-*+0123456789", content[0]) >= 0 && fenceOpen(stripContainers(line)) != nil:
			fence = fenceOpen(stripContainers(line))
		case bytes.HasPrefix(content, []byte("<table>")):
			inTable = true
		default:
			fixed = tidyLine(line, md[min(end+1, len(md)):])
		}
		if out == nil && len(fixed) != len(line) {
			out = append(make([]byte, 0, len(md)), md[:start]...)
		}
		if out != nil {
			out = append(out, fixed...)
			if end < len(md) {
				out = append(out, '\n')
			}
		}
		start = end + 1
	}
	if out == nil {
		return md
	}
	return out
}

// tidyLine trims the white space at the end of a line of text; a hard break that continues its
// paragraph on the next line (the start of rest) becomes a backslash.
func tidyLine(line, rest []byte) []byte {
	if len(line) == 0 {
		return line
	}
	if last := line[len(line)-1]; last != ' ' && last != '\t' && last != 0xA0 { // 0xA0 ends U+00A0 in UTF-8
		return line
	}
	trimmed := bytes.TrimRight(line, " \t\u00a0")
	if len(trimmed) == len(line) {
		return line
	}
	next := rest
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		next = rest[:i]
	}
	if bytes.HasSuffix(line, []byte("  ")) && len(bytes.Trim(trimmed, "> ")) > 0 && len(rest) > 0 && continuesParagraph(next) &&
		!atxHeading.Match(bytes.TrimLeft(trimmed, "> ")) {
		return append(trimmed[:len(trimmed):len(trimmed)], '\\')
	}
	return trimmed
}

// stripContainers removes the blockquote prefixes, list markers and indentation before a
// line's content.
func stripContainers(line []byte) []byte {
	for {
		s := listMarker.ReplaceAll(bytes.TrimLeft(line, "> "), nil)
		if len(s) == len(line) {
			return s
		}
		line = s
	}
}

// fenceOpen returns the fence a line's content opens (three or more ` or ~; a backtick fence's
// info string holds no backtick), or nil.
func fenceOpen(content []byte) []byte {
	for _, c := range []byte("`~") {
		n := 0
		for n < len(content) && content[n] == c {
			n++
		}
		if n >= 3 && (c == '~' || bytes.IndexByte(content[n:], '`') < 0) {
			return bytes.Repeat([]byte{c}, n)
		}
	}
	return nil
}

func isFenceClose(content, fence []byte) bool {
	return bytes.HasPrefix(content, fence) && len(bytes.TrimSpace(bytes.TrimLeft(content, string(fence[:1])))) == 0
}

var (
	listMarker = regexp.MustCompile(`^(?:[-*+]|[0-9]{1,9}[.)])[ ]+`)
	atxHeading = regexp.MustCompile(`^#{1,6}(?:[ \t]|$)`)
	// blockStart matches the start of a line that begins a new block rather than continuing a
	// paragraph: a list item, heading, quote, fence, HTML block, display formula, or thematic
	// break (after the container prefixes are removed).
	blockStart = regexp.MustCompile(`^(?:(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)|#{1,6}(?:[ \t]|$)|>|` + "```|~~~" +
		`|</?[A-Za-z]|\$\$|(?:[-*_][ \t]*){3,}$)`)
)

// continuesParagraph reports whether line continues the paragraph of the line before it.
func continuesParagraph(line []byte) bool {
	content := bytes.TrimLeft(line, "> ")
	if len(bytes.TrimSpace(content)) == 0 {
		return false
	}
	return !blockStart.Match(content)
}
