package bitrixfake

import (
	"encoding/json"
	"testing"
)

// PHPText writes text the way the portal's answers carry it: json_encode's escapes, the NUL as
// \u0000, bytes that are not UTF-8 raw and a surrogate encoded as UTF-8 as a lone escape; and
// encoding/json still reads it as JSON (as the client does).
func TestPHPText(t *testing.T) {
	cases := map[string]string{
		"plain":          `"plain"`,
		"a\x00b":         `"a\u0000b"`,
		`q"/\`:           `"q\"\/\\"`,
		"é😀":             `"\u00e9\ud83d\ude00"`,
		"x\xffy":         "\"x\xffy\"",
		"s\xed\xa0\x80e": `"s\ud800e"`,
		"lo\xed\xb0\x80": `"lo\udc00"`,
		"cut\xd0":        "\"cut\xd0\"",
		"\n\t":           `"\u000a\u0009"`,
	}
	for in, want := range cases {
		got := PHPText(in)
		if string(got) != want {
			t.Errorf("PHPText(%q) = %s, want %s", in, got, want)
		}
		var s string
		if err := json.Unmarshal(got, &s); err != nil {
			t.Errorf("PHPText(%q) = %s: not JSON encoding/json reads: %v", in, got, err)
		}
	}
}
