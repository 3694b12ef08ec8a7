package habr

import (
	"bytes"
	"html"
)

// The author's display name is not in the article element that the fast path parses: every
// layout shows it in the author card after the article (span.tm-user-card__name since 2019,
// a.user-info__fullname on the legacy site), from 1 to 26 KB after the article's end in the
// fixtures. It is read from the page's bytes in a window after the article, by the same code on
// both paths, so the fast path needs no second parse and cannot differ from the whole-page one.

// nameClasses mark the element whose text is the display name.
var nameClasses = [][]byte{[]byte("tm-user-card__name"), []byte("user-info__fullname")}

// cardWindow is how far from the card's link to the author's profile its name element may be.
const cardWindow = 1024

// afterArticleWindow is how much of the page after the article is searched for the author
// card (and, by the fast path, for a poll): a whole page is 100-900 KB, mostly comments and
// sidebars, and scanning all of it for a card cost a tenth of an extraction.
const afterArticleWindow = 64 << 10

// afterArticle returns the part of page where the author card and a poll outside the article
// can be: from the end of the first article element on (found as the fast path finds it, see
// scanPrefix), for afterArticleWindow bytes; the whole page if no article element is found.
func afterArticle(page []byte) []byte {
	start := -1
	if pre, ok := scanPrefix(page); ok {
		start = pre.article
	}
	if start < 0 {
		return page
	}
	end := bytes.Index(page[start:], []byte(articleEnd))
	if end < 0 {
		return page
	}
	return afterOffset(page, start+end+len(articleEnd))
}

// afterOffset is the window of afterArticle from end, the offset just past the article.
func afterOffset(page []byte, end int) []byte {
	return page[end:min(len(page), end+afterArticleWindow)]
}

// authorName returns the display name of the author with login from after, the page after
// its article (see afterArticle), or "" when the page shows none (or shows the login in its
// place, as the 2021 card does for a user without a name).
func authorName(after []byte, login string) string {
	if login == "" {
		return ""
	}
	if name := cardName(after, login); name != login {
		return name
	}
	return ""
}

// cardName finds the author card after the article by its link to the author's profile,
// /users/<login>/ (one scan for a string that is rare in a page), and reads the name element
// near it.
func cardName(after []byte, login string) string {
	profile := []byte("/users/" + login + "/")
	// The card links to the profile more than once; comments by the author after it do too,
	// so only the first few links are tried.
	for tries, from := 0, 0; tries < 4; tries++ {
		i := bytes.Index(after[from:], profile)
		if i < 0 {
			return ""
		}
		i += from
		if name := nameNear(after[max(0, i-cardWindow):min(len(after), i+cardWindow)]); name != "" {
			return name
		}
		from = i + len(profile)
	}
	return ""
}

// nameNear returns the text of the first name element in card.
func nameNear(card []byte) string {
	for _, class := range nameClasses {
		for from := 0; from < len(card); {
			i := bytes.Index(card[from:], class)
			if i < 0 {
				break
			}
			i += from
			from = i + len(class)
			// A whole class name inside a start tag: <span class="x tm-user-card__name">.
			if !isClassBoundary(card, i-1) || !isClassBoundary(card, i+len(class)) {
				continue
			}
			gt := bytes.IndexByte(card[i:], '>')
			if gt < 0 {
				continue
			}
			text := card[i+gt+1:]
			end := bytes.IndexByte(text, '<')
			if end < 0 {
				continue
			}
			if name := squash(html.UnescapeString(string(text[:end]))); name != "" {
				return name
			}
		}
	}
	return ""
}

func isClassBoundary(page []byte, i int) bool {
	if i < 0 || i >= len(page) {
		return false
	}
	switch page[i] {
	case '"', '\'', ' ', '\t', '\n':
		return true
	}
	return false
}
