package targetfake

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the target's side of docs/target-import-api.md, "content_hash", written from the
// document and not from the client: a fake that hashed with the client's code would agree with
// any canonicalisation bug of the client, and verify would never see it. It parses JSON itself,
// so that it can refuse what the document refuses (I-JSON only) instead of inheriting
// encoding/json's leniency (lone surrogates turned into U+FFFD, duplicate names merged).

// contentHash is "sha256:" and the lower-case hex SHA-256 of the payload's canonical JSON.
func contentHash(payload []byte) (string, error) {
	canon, err := canonicalJSON(payload)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// canonicalJSON parses an I-JSON text and writes it as RFC 8785 does.
func canonicalJSON(text []byte) ([]byte, error) {
	p := &jsonParser{in: text}
	p.space()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.space(); p.pos != len(p.in) {
		return nil, p.errorf("text after the value")
	}
	var out []byte
	return v.appendCanonical(out), nil
}

// jsonValue is one parsed value: exactly one of its fields says what it is.
type jsonValue struct {
	kind    byte // 'n' null, 't' true, 'f' false, '#' number, '"' string, '[' array, '{' object
	number  float64
	str     string
	items   []jsonValue
	members []jsonMember
}

type jsonMember struct {
	name  string
	value jsonValue
}

type jsonParser struct {
	in  []byte
	pos int
}

func (p *jsonParser) errorf(format string, a ...any) error {
	return fmt.Errorf("payload is not I-JSON at byte %d: %s", p.pos, fmt.Sprintf(format, a...))
}

func (p *jsonParser) space() {
	for p.pos < len(p.in) && strings.IndexByte(" \t\n\r", p.in[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *jsonParser) value() (jsonValue, error) {
	if p.pos == len(p.in) {
		return jsonValue{}, p.errorf("unexpected end")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		return jsonValue{kind: '"', str: s}, err
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	for _, lit := range []string{"null", "true", "false"} {
		if strings.HasPrefix(string(p.in[p.pos:min(len(p.in), p.pos+5)]), lit) {
			p.pos += len(lit)
			return jsonValue{kind: lit[0]}, nil
		}
	}
	return jsonValue{}, p.errorf("unexpected %q", p.in[p.pos])
}

func (p *jsonParser) object() (jsonValue, error) {
	v := jsonValue{kind: '{'}
	p.pos++ // {
	seen := map[string]bool{}
	for first := true; ; first = false {
		p.space()
		if p.pos < len(p.in) && p.in[p.pos] == '}' && first {
			p.pos++
			return v, nil
		}
		if p.pos == len(p.in) || p.in[p.pos] != '"' {
			return v, p.errorf("want a member name")
		}
		name, err := p.string()
		if err != nil {
			return v, err
		}
		if seen[name] {
			return v, p.errorf("duplicate member name %q", name)
		}
		seen[name] = true
		if p.space(); p.pos == len(p.in) || p.in[p.pos] != ':' {
			return v, p.errorf("want ':'")
		}
		p.pos++
		p.space()
		member, err := p.value()
		if err != nil {
			return v, err
		}
		v.members = append(v.members, jsonMember{name, member})
		if p.space(); p.pos < len(p.in) && p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.in) && p.in[p.pos] == '}' {
			p.pos++
			return v, nil
		}
		return v, p.errorf("want ',' or '}'")
	}
}

func (p *jsonParser) array() (jsonValue, error) {
	v := jsonValue{kind: '['}
	p.pos++ // [
	for first := true; ; first = false {
		p.space()
		if p.pos < len(p.in) && p.in[p.pos] == ']' && first {
			p.pos++
			return v, nil
		}
		item, err := p.value()
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		if p.space(); p.pos < len(p.in) && p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.in) && p.in[p.pos] == ']' {
			p.pos++
			return v, nil
		}
		return v, p.errorf("want ',' or ']'")
	}
}

// number reads RFC 8259's number grammar and keeps the nearest IEEE 754 double: I-JSON allows
// no other precision, and a number beyond the double range is refused.
func (p *jsonParser) number() (jsonValue, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.in[p.pos] == '-' {
		p.pos++
	}
	intStart := p.pos
	if n := digits(); n == 0 || n > 1 && p.in[intStart] == '0' {
		return jsonValue{}, p.errorf("bad number %q", p.in[start:p.pos])
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return jsonValue{}, p.errorf("bad number %q", p.in[start:p.pos])
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return jsonValue{}, p.errorf("bad number %q", p.in[start:p.pos])
		}
	}
	f, err := strconv.ParseFloat(string(p.in[start:p.pos]), 64)
	if err != nil {
		return jsonValue{}, p.errorf("number %s is not a finite double", p.in[start:p.pos])
	}
	return jsonValue{kind: '#', number: f}, nil
}

// string reads a string: valid UTF-8, no raw control characters, and \u escapes whose
// surrogates come in pairs (a lone one is not I-JSON).
func (p *jsonParser) string() (string, error) {
	p.pos++ // "
	var b strings.Builder
	for {
		if p.pos == len(p.in) {
			return "", p.errorf("unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf("raw control character in a string")
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		default:
			r, size := utf8.DecodeRune(p.in[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errorf("invalid UTF-8")
			}
			b.Write(p.in[p.pos : p.pos+size])
			p.pos += size
		}
	}
}

func (p *jsonParser) escape() (rune, error) {
	if p.pos+1 >= len(p.in) {
		return 0, p.errorf("unterminated escape")
	}
	c := p.in[p.pos+1]
	p.pos += 2
	if i := strings.IndexByte(`"\/bfnrt`, c); i >= 0 {
		return rune("\"\\/\b\f\n\r\t"[i]), nil
	}
	if c != 'u' {
		return 0, p.errorf(`bad escape \%c`, c)
	}
	r, err := p.hex4()
	if err != nil || !utf16.IsSurrogate(r) {
		return r, err
	}
	if r >= 0xDC00 || !strings.HasPrefix(string(p.in[p.pos:min(len(p.in), p.pos+2)]), `\u`) {
		return 0, p.errorf("lone surrogate")
	}
	p.pos += 2
	low, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if low < 0xDC00 || low > 0xDFFF {
		return 0, p.errorf("lone surrogate")
	}
	return utf16.DecodeRune(r, low), nil
}

func (p *jsonParser) hex4() (rune, error) {
	if p.pos+4 > len(p.in) {
		return 0, p.errorf(`short \u escape`)
	}
	n, err := strconv.ParseUint(string(p.in[p.pos:p.pos+4]), 16, 16)
	if err != nil {
		return 0, p.errorf(`bad \u escape %q`, p.in[p.pos:p.pos+4])
	}
	p.pos += 4
	return rune(n), nil
}

// appendCanonical writes v as RFC 8785 does: no whitespace, members sorted by their names'
// UTF-16 code units, strings and numbers as ECMAScript's JSON.stringify writes them.
func (v jsonValue) appendCanonical(out []byte) []byte {
	switch v.kind {
	case 'n':
		return append(out, "null"...)
	case 't':
		return append(out, "true"...)
	case 'f':
		return append(out, "false"...)
	case '#':
		return append(out, ecmaNumber(v.number)...)
	case '"':
		return appendECMAString(out, v.str)
	case '[':
		out = append(out, '[')
		for i, item := range v.items {
			if i > 0 {
				out = append(out, ',')
			}
			out = item.appendCanonical(out)
		}
		return append(out, ']')
	}
	members := slices.Clone(v.members)
	slices.SortFunc(members, func(a, b jsonMember) int { return compareUTF16(a.name, b.name) })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendECMAString(out, m.name)
		out = append(out, ':')
		out = m.value.appendCanonical(out)
	}
	return append(out, '}')
}

// compareUTF16 orders two strings by their UTF-16 code units, which differs from byte (and code
// point) order for characters above U+FFFF against U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// appendECMAString escapes '"', '\\' and U+0000..U+001F only: the five with a short form by it,
// the others as \u00xx in lower-case hex.
func appendECMAString(out []byte, s string) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		short := strings.IndexByte("\"\\\b\f\n\r\t", c)
		switch {
		case short >= 0:
			out = append(out, '\\', `"\bfnrt`[short])
		case c < 0x20:
			out = append(out, fmt.Sprintf(`\u%04x`, c)...)
		default:
			out = append(out, c) // UTF-8 bytes pass as they are
		}
	}
	return append(out, '"')
}

// ecmaNumber is ECMAScript's Number::toString (ECMA-262 §6.1.6.1.20), step by step: with s the
// k shortest round-trip digits and n the position of the decimal point (x = 0.s × 10^n).
func ecmaNumber(x float64) string {
	if x == 0 {
		return "0" // -0 too
	}
	if x < 0 {
		return "-" + ecmaNumber(-x)
	}
	mantissa, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e") // d.ddd e±XX
	s := strings.Replace(mantissa, ".", "", 1)
	k := len(s)
	e, _ := strconv.Atoi(exp)
	n := e + 1
	switch {
	case k <= n && n <= 21:
		return s + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return s[:n] + "." + s[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + s
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	abs := strconv.Itoa(max(n-1, 1-n))
	if k == 1 {
		return s + "e" + sign + abs
	}
	return s[:1] + "." + s[1:] + "e" + sign + abs
}
