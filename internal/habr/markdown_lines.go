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
	lines := bytes.Split(md, []byte("\n"))
	var fence []byte // the open code fence, nil outside code
	inTable := false
	for i, line := range lines {
		content := bytes.TrimLeft(line, "> ") // inside its blockquotes and list indentation
		switch {
		case fence != nil:
			if isFenceClose(content, fence) {
				fence = nil
			} else if len(line) > 0 && len(bytes.ReplaceAll(line, []byte("> "), nil)) == 0 {
				// An empty code line in a blockquote: its prefix, without the optional space.
				lines[i] = bytes.TrimRight(line, " ")
			}
			continue
		case inTable:
			inTable = !bytes.HasPrefix(content, []byte("</table>"))
			continue
		}
		if len(content) > 0 && strings.IndexByte("`~-*+0123456789", content[0]) >= 0 {
			if f := fenceOpen(stripContainers(line)); f != nil {
				fence = f
				continue
			}
		}
		if bytes.HasPrefix(content, []byte("<table>")) {
			inTable = true
			continue
		}
		trimmed := bytes.TrimRight(line, " \t\u00a0")
		if len(trimmed) == len(line) {
			continue
		}
		hardBreak := bytes.HasSuffix(line, []byte("  "))
		if hardBreak && len(bytes.Trim(trimmed, "> ")) > 0 && i+1 < len(lines) && continuesParagraph(lines[i+1]) &&
			!atxHeading.Match(bytes.TrimLeft(trimmed, "> ")) {
			trimmed = append(trimmed, '\\')
		}
		lines[i] = trimmed
	}
	return bytes.Join(lines, []byte("\n"))
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
