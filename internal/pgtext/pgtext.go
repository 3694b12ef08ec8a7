// Package pgtext makes text storable by Postgres: real people's text, as portals and APIs send
// it, holds what a UTF8 database refuses, and one such character used to fail a whole page of
// records (SQLSTATE 22P05, 22021, 22P02). Three things are refused:
//
//   - NUL: a 0x00 byte in text (22021), or the escape \u0000 in JSON cast to jsonb (22P05; PHP's
//     json_encode writes a NUL that way). It is removed: it carries no text (C strings and pasted
//     binary leave it at the end of a value), and removing it keeps the value readable.
//   - Invalid UTF-8 (22021): each byte that does not start a valid sequence is replaced with
//     U+FFFD, the replacement character, so the reader sees that something was there.
//   - A lone surrogate escape in JSON, \ud800 not followed by its low half or \udc00 without its
//     high half (jsonb refuses it): replaced with the escape \ufffd.
//
// JSON cleans raw JSON text and reports the path of every string it changed; String cleans plain
// text. Both return their input itself when it needs nothing, after one fast scan: on clean text
// (nearly all of it) they cost a read of the bytes and no allocation.
package pgtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Change is one value that was cleaned: where it is, and what was replaced in it.
type Change struct {
	// Path is the JSON path of the string ($.NAME, $.data[3].caption, $ for the whole
	// document); empty for plain text.
	Path string
	// NUL is how many NUL characters were removed.
	NUL int
	// Invalid is how many bytes of invalid UTF-8 were replaced with U+FFFD.
	Invalid int
	// Surrogates is how many lone surrogate escapes were replaced with U+FFFD.
	Surrogates int
}

// Replaced says what was replaced, for a log line: "1 NUL removed, 2 invalid UTF-8 bytes
// replaced with U+FFFD".
func (c Change) Replaced() string {
	var parts []string
	if c.NUL > 0 {
		parts = append(parts, fmt.Sprintf("%d NUL removed", c.NUL))
	}
	if c.Invalid > 0 {
		parts = append(parts, fmt.Sprintf("%d invalid UTF-8 %s replaced with U+FFFD", c.Invalid, plural(c.Invalid, "byte")))
	}
	if c.Surrogates > 0 {
		parts = append(parts, fmt.Sprintf("%d lone %s replaced with U+FFFD", c.Surrogates, plural(c.Surrogates, "surrogate")))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// String is the path and what was replaced: "$.NAME: 1 NUL removed".
func (c Change) String() string {
	if c.Path == "" {
		return c.Replaced()
	}
	return c.Path + ": " + c.Replaced()
}

// Describe joins changes for a log line: "$.NAME: 1 NUL removed; $.TITLE: ...".
func Describe(changes []Change) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// Paths lists the changes' paths.
func Paths(changes []Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out
}

func (c *Change) add(o Change) {
	c.NUL += o.NUL
	c.Invalid += o.Invalid
	c.Surrogates += o.Surrogates
}

func (c Change) zero() bool { return c.NUL == 0 && c.Invalid == 0 && c.Surrogates == 0 }

// String returns s as Postgres can store it in a text column (see the package comment) and
// what was replaced; s itself, and a zero Change, when it needs nothing.
func String(s string) (string, Change) {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s, Change{}
	}
	var c Change
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0:
			c.NUL++
		case r == utf8.RuneError && size == 1:
			c.Invalid++
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), c
}

// Strings cleans every string of list with String, copying list only when one changes; the
// changes are summed.
func Strings(list []string) ([]string, Change) {
	var sum Change
	out := list
	copied := false
	for i, s := range list {
		t, c := String(s)
		if c.zero() {
			continue
		}
		if !copied {
			copied = true
			out = append([]string(nil), list...)
		}
		out[i] = t
		sum.add(c)
	}
	return out, sum
}

// JSON returns raw JSON text that Postgres can store as jsonb (see the package comment) and a
// Change for every string (object keys included) it changed, in document order; raw itself and
// no changes when it needs nothing. raw must be valid JSON (as encoding/json accepts it: invalid
// UTF-8 inside strings is what this is for); given anything else it still cleans the strings it
// finds and never panics, but the paths may be wrong.
func JSON(raw []byte) ([]byte, []Change) {
	if cleanJSON(raw) {
		return raw, nil
	}
	w := rewriter{in: raw, out: make([]byte, 0, len(raw))}
	w.run()
	if len(w.changes) == 0 {
		return raw, nil // valid surrogate pairs only: the scan cannot tell them at a glance
	}
	return w.out, w.changes
}

// cleanJSON is the fast scan: valid UTF-8, no escape of NUL and no surrogate escape but whole
// pairs (emoji as PHP escapes them).
func cleanJSON(raw []byte) bool {
	if bytes.IndexByte(raw, 0) >= 0 || !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); {
		if raw[i] != '\\' { // escapes come in runs: look further only past one
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				return true
			}
			i += j
		}
		if i+1 >= len(raw) {
			return true
		}
		if raw[i+1] != 'u' {
			i += 2 // \\, \", \n ...: the escaped character is never the start of another escape
			continue
		}
		// Most escapes are neither a NUL nor a surrogate (PHP escapes every letter beyond ASCII):
		// told apart by their first digits, without decoding them.
		if i+5 < len(raw) {
			if c := raw[i+2]; c != 'd' && c != 'D' {
				if c == '0' && raw[i+3] == '0' && raw[i+4] == '0' && raw[i+5] == '0' {
					return false
				}
				i += 6
				continue
			}
			if c := raw[i+3]; c < '8' || c > '9' && c < 'A' || c > 'F' && c < 'a' || c > 'f' {
				i += 6 // \uD000-\uD7FF
				continue
			}
		}
		v, ok := hex4(raw, i+2)
		switch {
		case !ok:
			i += 2
		case v == 0:
			return false
		case isHigh(v):
			lo, ok := escapeAt(raw, i+6)
			if !ok || !isLow(lo) {
				return false
			}
			i += 12
		case isLow(v):
			return false
		default:
			i += 6
		}
	}
	return true
}

func isHigh(v rune) bool { return v >= 0xD800 && v <= 0xDBFF }
func isLow(v rune) bool  { return v >= 0xDC00 && v <= 0xDFFF }

// escapeAt reads a \uXXXX escape at i.
func escapeAt(b []byte, i int) (rune, bool) {
	if i < 0 || i+1 >= len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	return hex4(b, i+2)
}

// hex4 reads four hex digits at i.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// frame is an open object or array of the rewriter: its path, and the key or index of the
// value being read in it.
type frame struct {
	object  bool
	path    string
	key     [2]int // where the current member's key token is in out (objects)
	index   int    // the current element's index (arrays)
	keyNext bool   // an object expects a key next
}

// rewriter copies JSON from in to out, cleaning every string and keeping track of where it is.
type rewriter struct {
	in      []byte
	out     []byte
	stack   []frame
	changes []Change
}

func (w *rewriter) run() {
	for i := 0; i < len(w.in); {
		c := w.in[i]
		switch c {
		case '{', '[':
			w.stack = append(w.stack, frame{object: c == '{', path: w.path(), keyNext: c == '{'})
			w.out = append(w.out, c)
			i++
		case '}', ']':
			if len(w.stack) > 0 {
				w.stack = w.stack[:len(w.stack)-1]
			}
			w.out = append(w.out, c)
			i++
		case ',':
			if n := len(w.stack); n > 0 {
				if f := &w.stack[n-1]; f.object {
					f.keyNext = true
				} else {
					f.index++
				}
			}
			w.out = append(w.out, c)
			i++
		case '"':
			i = w.str(i)
		case 0: // not valid JSON; still nothing Postgres could store
			w.changes = append(w.changes, Change{Path: w.path(), NUL: 1})
			i++
		default:
			if c >= utf8.RuneSelf {
				// Outside a string only in invalid JSON: copy it cleaned all the same.
				r, size := utf8.DecodeRune(w.in[i:])
				if r == utf8.RuneError && size == 1 {
					w.changes = append(w.changes, Change{Path: w.path(), Invalid: 1})
					w.out = utf8.AppendRune(w.out, utf8.RuneError)
				} else {
					w.out = append(w.out, w.in[i:i+size]...)
				}
				i += size
				continue
			}
			w.out = append(w.out, c)
			i++
		}
	}
}

// path is where the value being read is.
func (w *rewriter) path() string {
	n := len(w.stack)
	if n == 0 {
		return "$"
	}
	f := w.stack[n-1]
	if !f.object {
		return f.path + "[" + strconv.Itoa(f.index) + "]"
	}
	key := decodeKey(w.out[f.key[0]:f.key[1]])
	if plainKey(key) {
		return f.path + "." + key
	}
	return f.path + "[" + strconv.Quote(key) + "]"
}

// plainKey reports whether a key can follow a dot in a path.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= utf8.RuneSelf && r != utf8.RuneError) {
			return false
		}
	}
	return true
}

// str copies the string token starting at i (its opening quote), cleaned, and returns the index
// after its closing quote.
func (w *rewriter) str(i int) int {
	isKey := false
	if n := len(w.stack); n > 0 && w.stack[n-1].object && w.stack[n-1].keyNext {
		isKey = true
	}
	start := len(w.out)
	var c Change
	w.out = append(w.out, '"')
	i++
	for i < len(w.in) {
		b := w.in[i]
		switch {
		case b == '"':
			w.out = append(w.out, '"')
			i++
			goto done
		case b == '\\':
			if i+1 < len(w.in) && w.in[i+1] == 'u' {
				v, ok := hex4(w.in, i+2)
				switch {
				case !ok:
					w.out = append(w.out, w.in[i:i+2]...)
					i += 2
				case v == 0:
					c.NUL++
					i += 6
				case isHigh(v):
					if lo, ok := escapeAt(w.in, i+6); ok && isLow(lo) {
						w.out = append(w.out, w.in[i:i+12]...)
						i += 12
					} else {
						c.Surrogates++
						w.out = append(w.out, `\ufffd`...)
						i += 6
					}
				case isLow(v):
					c.Surrogates++
					w.out = append(w.out, `\ufffd`...)
					i += 6
				default:
					w.out = append(w.out, w.in[i:i+6]...)
					i += 6
				}
				continue
			}
			end := min(i+2, len(w.in))
			w.out = append(w.out, w.in[i:end]...)
			i = end
		case b == 0:
			c.NUL++
			i++
		case b >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(w.in[i:])
			if r == utf8.RuneError && size == 1 {
				c.Invalid++
				w.out = utf8.AppendRune(w.out, utf8.RuneError)
			} else {
				w.out = append(w.out, w.in[i:i+size]...)
			}
			i += size
		default:
			w.out = append(w.out, b)
			i++
		}
	}
done:
	if isKey {
		f := &w.stack[len(w.stack)-1]
		f.key = [2]int{start, len(w.out)}
		f.keyNext = false
	}
	if !c.zero() {
		c.Path = w.path()
		w.changes = append(w.changes, c)
	}
	return i
}

// decodeKey reads a cleaned key token for the path; a key it cannot read is shown as written.
func decodeKey(tok []byte) string {
	if len(tok) >= 2 && bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1])
	}
	var s string
	if err := json.Unmarshal(tok, &s); err == nil {
		return s
	}
	return string(bytes.Trim(tok, `"`))
}
