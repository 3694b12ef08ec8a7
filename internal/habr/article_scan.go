package habr

import (
	"bytes"
)

// prefix is what scanPrefix finds before the page's first <article>.
type prefix struct {
	article int      // offset of the first <article> start tag
	hubs    int      // offset of the 2019 mobile hubs block before it, or -1
	metas   [][2]int // its <meta property> tags, as [start, end) offsets
}

// mobileHubs starts the hubs block that the 2019 mobile layout shows right
// before the article rather than in it.
var mobileHubs = []byte(`<div class="tm-article-hubs`)

// scanPrefix finds the first <article> start tag of page and the <meta>
// tags with a property before it. It follows html.Tokenizer's rules for
// where tags, comments and raw text (scripts, styles) begin and end, so
// that a "<" in a script, comment or attribute is not taken for a tag, but
// builds no tokens. Where those rules depend on the parser's state (foreign content,
// CDATA, escaped scripts, plaintext) it gives up and reports false.
func scanPrefix(page []byte) (prefix, bool) {
	p := prefix{hubs: -1}
	foreign := 0    // open <svg> and <math> elements
	formatting := 0 // formatting elements (<a>, <b>, ...) opened and not closed
	var buf [16]byte
	for i := 0; ; {
		j := bytes.IndexByte(page[i:], '<')
		if j < 0 || i+j+2 >= len(page) {
			return p, false
		}
		i += j
		c := page[i+1]
		switch {
		case isASCIILetter(c):
			end, ok := tagEnd(page, i+1)
			if !ok {
				return p, false
			}
			name := lowerName(tagName(page[i+1:end]), &buf)
			switch name {
			case "article":
				// An open formatting element is one the parser carries into the
				// article (an <a> in it closes the outer one, a text reopens it):
				// the article alone would not read the same.
				p.article = i
				return p, formatting == 0
			case "meta":
				// The layouts read only meta[property=…] tags.
				if bytes.Contains(bytes.ToLower(page[i:end]), []byte("property")) {
					p.metas = append(p.metas, [2]int{i, end})
				}
			case "div":
				if rest, ok := bytes.CutPrefix(page[i:], mobileHubs); ok && len(rest) > 0 && (rest[0] == '"' || rest[0] == ' ') {
					p.hubs = i
				}
			case "svg", "math":
				if page[end-2] != '/' {
					foreign++
				}
			case "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u":
				formatting++ // "<b/>" opens a <b> too: HTML ignores the slash here
			case "plaintext":
				return p, false
			case "script", "style", "textarea", "title", "iframe", "noembed", "noframes", "noscript", "xmp":
				text := end
				end, ok = rawTextEnd(page, text, name)
				// Inside <svg> the parser makes these ordinary elements,
				// such as an icon's <title>; that reads the same only if
				// their text holds no tag.
				if !ok || foreign > 0 && bytes.IndexByte(page[text:end], '<') >= 0 {
					return p, false
				}
			}
			i = end
		case c == '/' && isASCIILetter(page[i+2]):
			end, ok := tagEnd(page, i+2)
			if !ok {
				return p, false
			}
			switch lowerName(tagName(page[i+2:end]), &buf) {
			case "svg", "math":
				foreign = max(foreign-1, 0)
			case "a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u":
				formatting = max(formatting-1, 0)
			}
			i = end
		case c == '/' && page[i+2] == '>':
			i += 3
		case c == '!' && bytes.HasPrefix(page[i:], []byte("<!--")):
			end, ok := commentEnd(page, i+4)
			if !ok {
				return p, false
			}
			i = end
		case c == '!' && bytes.HasPrefix(page[i:], []byte("<![CDATA[")):
			return p, false // text or a comment, by the parser's state
		case c == '!' || c == '?' || c == '/':
			// A doctype or a bogus comment, up to the next '>'.
			k := bytes.IndexByte(page[i:], '>')
			if k < 0 {
				return p, false
			}
			i += k + 1
		default:
			i++ // a '<' in text
		}
	}
}

// lowerName returns name in lower case, or "" for a name longer than any
// the scanner looks for.
func lowerName(name []byte, buf *[16]byte) string {
	if len(name) > len(buf) {
		return ""
	}
	for k, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[k] = c
	}
	return string(buf[:len(name)])
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

// tagName returns the name at the start of tag, the bytes after "<" or "</".
func tagName(tag []byte) []byte {
	for k, c := range tag {
		if isHTMLSpace(c) || c == '/' || c == '>' {
			return tag[:k]
		}
	}
	return tag
}

// tagEnd returns the offset just past the '>' that ends the tag whose name
// starts at i, reading attributes as html.Tokenizer's readTag does, so that
// a quoted '>' does not end it.
func tagEnd(page []byte, i int) (int, bool) {
	n := len(page)
	for i < n && !isHTMLSpace(page[i]) && page[i] != '/' && page[i] != '>' {
		i++
	}
	for {
		for i < n && isHTMLSpace(page[i]) {
			i++
		}
		if i >= n {
			return 0, false
		}
		if page[i] == '>' {
			return i + 1, true
		}
		// The attribute name; a leading '=' belongs to it.
		for k := i; i < n; i++ {
			c := page[i]
			if isHTMLSpace(c) || c == '/' || c == '>' || c == '=' && i > k {
				break
			}
		}
		// The value, if any.
		for i < n && isHTMLSpace(page[i]) {
			i++
		}
		if i >= n {
			return 0, false
		}
		switch page[i] {
		case '/':
			i++
			continue
		case '=':
			i++
		default:
			continue
		}
		for i < n && isHTMLSpace(page[i]) {
			i++
		}
		if i >= n {
			return 0, false
		}
		switch q := page[i]; q {
		case '>':
		case '"', '\'':
			k := bytes.IndexByte(page[i+1:], q)
			if k < 0 {
				return 0, false
			}
			i += k + 2
		default:
			for i < n && !isHTMLSpace(page[i]) && page[i] != '>' {
				i++
			}
		}
	}
}

// rawTextEnd returns the offset of the "</name" that ends the raw text
// starting at i. A script holding "<!--" may hide its end tag by rules this
// scanner does not follow, so it gives up on such a script.
func rawTextEnd(page []byte, i int, name string) (int, bool) {
	for k := i; ; {
		j := bytes.Index(page[k:], []byte("</"))
		if j < 0 {
			return 0, false
		}
		k += j
		rest := page[k+2:]
		if len(rest) > len(name) && bytes.EqualFold(rest[:len(name)], []byte(name)) {
			if c := rest[len(name)]; isHTMLSpace(c) || c == '/' || c == '>' {
				if name == "script" && bytes.Contains(page[i:k], []byte("<!--")) {
					return 0, false
				}
				return k, true
			}
		}
		k += 2
	}
}

// commentEnd returns the offset just past the comment whose text starts at
// i, after "<!--". Like html.Tokenizer, it ends the comment at the first
// '>' that follows "--" or "--!" or only dashes ("<!-->", "<!--->").
func commentEnd(page []byte, i int) (int, bool) {
	for k := i; ; {
		j := bytes.IndexByte(page[k:], '>')
		if j < 0 {
			return 0, false
		}
		k += j
		text := page[i:k]
		if len(bytes.Trim(text, "-")) == 0 || bytes.HasSuffix(text, []byte("--")) || bytes.HasSuffix(text, []byte("--!")) {
			return k + 1, true
		}
		k++
	}
}
