package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShownEscapesAndCuts(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, кириллица 🙂", "plain text, кириллица 🙂"},
		{"red \x1b[31mALERT\x1b[0m", `red \x1b[31mALERT\x1b[0m`},
		{"line one\nline two\r\n\tend", `line one\nline two\r\n\tend`},
		{"bell\a nul\x00 del\x7f", `bell\x07 nul\x00 del\x7f`},
		{"c1 \u009b2J", `c1 \u009b2J`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"sep\u2028x", `sep\u2028x`},
	} {
		if got := shown(c.in); got != c.want {
			t.Errorf("shown(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := shownBlock("# title\n\n\tcode \x1b]0;owned\x07\n"); got != "# title\n\n\tcode \\x1b]0;owned\\x07\n" {
		t.Errorf("shownBlock = %q", got)
	}

	exact := strings.Repeat("я", shownMax)
	if got := shown(exact); got != exact {
		t.Errorf("a value of exactly %d runes was cut: %d runes", shownMax, utf8.RuneCountInString(got))
	}
	long := strings.Repeat("я", 5000)
	got := shown(long)
	if want := strings.Repeat("я", shownMax-1) + "… (5000 characters in all)"; got != want {
		t.Errorf("shown of 5000 runes = %q…", got[:40])
	}
	// An escape is never cut in two, and the cap counts what is shown.
	got = shownCut(strings.Repeat("\x1b", 10), 10)
	if !strings.HasPrefix(got, `\x1b\x1b…`) || strings.Count(got, `\x1b`) != 2 {
		t.Errorf("shownCut of escapes = %q", got)
	}
}
