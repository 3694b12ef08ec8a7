package bitrixfake

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// PHPText is s as a JSON string the way the portal's PHP writes text it holds, byte for byte,
// for tests of what real portals send and Postgres cannot store. Set it as a field's value
// (SetUserField, SetGroupField, SetTaskField) and the answers carry it as it is:
//
//   - json_encode's escapes: every character beyond ASCII as \uXXXX (a surrogate pair beyond
//     the BMP), "/" as \/, control characters as \u00XX, so a NUL people pasted is \u0000;
//   - bytes that are not UTF-8 (text stored in another encoding, cut in the middle of a
//     character) pass through raw;
//   - a surrogate code point encoded as if it were a character (ED A0 80 for U+D800: what a
//     broken UTF-16 conversion leaves in the database) comes out as the lone escape \ud800.
func PHPText(s string) json.RawMessage {
	b := []byte{'"'}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '/':
				b = append(b, '\\', c)
			case c < 0x20:
				b = appendEscape(b, rune(c))
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
			if r > 0xFFFF {
				r -= 0x10000
				b = appendEscape(b, 0xD800+(r>>10))
				b = appendEscape(b, 0xDC00+(r&0x3FF))
			} else {
				b = appendEscape(b, r)
			}
			i += size
			continue
		}
		if r, ok := surrogateAt(s, i); ok {
			b = appendEscape(b, r)
			i += 3
			continue
		}
		b = append(b, c) // not UTF-8: as stored
		i++
	}
	return append(b, '"')
}

// surrogateAt reads a surrogate code point encoded as UTF-8 would encode it (ED A0-BF 80-BF).
func surrogateAt(s string, i int) (rune, bool) {
	if i+2 >= len(s) || s[i] != 0xED || s[i+1] < 0xA0 || s[i+1] > 0xBF || s[i+2] < 0x80 || s[i+2] > 0xBF {
		return 0, false
	}
	return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), true
}

func appendEscape(b []byte, r rune) []byte {
	b = append(b, '\\', 'u')
	h := strconv.FormatInt(int64(r), 16)
	for range 4 - len(h) {
		b = append(b, '0')
	}
	return append(b, h...)
}
