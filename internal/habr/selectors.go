package habr

import (
	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
)

// Compiling a CSS selector costs about as much as matching it against an article body, and an
// extraction matches some twenty; goquery's Find(string) compiles on every call. So every
// selector the extractor uses is compiled once, when the package loads, and never changes.

// css compiles a selector that is part of the code; an invalid one is a bug.
func css(s string) goquery.Matcher { return cascadia.MustCompile(s) }

// layoutSelectors are the layouts' selectors, compiled.
var layoutSelectors = compileLayouts()

func compileLayouts() map[string]goquery.Matcher {
	m := map[string]goquery.Matcher{}
	add := func(ss ...string) {
		for _, s := range ss {
			if s != "" {
				m[s] = css(s)
			}
		}
	}
	for _, l := range layouts {
		add(l.body, l.scope)
		add(l.title...)
		add(l.author...)
		add(l.hubs...)
		add(l.tags...)
		add(l.origin...)
		for _, t := range l.times {
			add(t.selector)
		}
	}
	return m
}

// layoutSelector returns a layout selector compiled.
func layoutSelector(s string) goquery.Matcher {
	if m, ok := layoutSelectors[s]; ok {
		return m
	}
	return css(s) // not one of the layouts': compiled now
}
