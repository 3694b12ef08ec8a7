package habr

import (
	"bytes"
	"encoding/json"
	"html"
)

// The author's display name is not in the article element that the fast path parses: every
// layout shows it in the author card after the article (span.tm-user-card__name since 2019,
// a.user-info__fullname on the legacy site). The SPA's state script, at the end of the page,
// has it too ("alias":"<login>","fullname":"<name>"). Both are read from the page's bytes, by
// the same code on both paths, so the fast path needs no second parse and cannot differ from
// the whole-page one.

// nameClasses mark the element whose text is the display name.
var nameClasses = [][]byte{[]byte("tm-user-card__name"), []byte("user-info__fullname")}

// cardWindow is how far after the name element the card's link to the author's profile may be.
const cardWindow = 1024

// authorName returns the display name of the author with login, or "" when the page shows
// none (or shows the login in its place, as the 2021 card does for a user without a name).
func authorName(page []byte, login string) string {
	if login == "" {
		return ""
	}
	name := cardName(page, login)
	if name == "" {
		name = stateName(page, login)
	}
	if name == login {
		return ""
	}
	return name
}

// cardName finds the first name element whose card links to /users/<login>/.
func cardName(page []byte, login string) string {
	profile := bytes.ToLower([]byte("/users/" + login + "/"))
	for _, class := range nameClasses {
		for from := 0; from < len(page); {
			i := bytes.Index(page[from:], class)
			if i < 0 {
				break
			}
			i += from
			from = i + len(class)
			// A whole class name inside a start tag: <span class="x tm-user-card__name">.
			if !isClassBoundary(page, i-1) || !isClassBoundary(page, i+len(class)) {
				continue
			}
			lt := bytes.LastIndexByte(page[:i], '<')
			gt := bytes.IndexByte(page[i:], '>')
			if lt < 0 || gt < 0 {
				continue
			}
			textStart := i + gt + 1
			textEnd := bytes.IndexByte(page[textStart:], '<')
			if textEnd < 0 {
				continue
			}
			card := page[lt:min(len(page), textStart+textEnd+cardWindow)]
			if !bytes.Contains(bytes.ToLower(card), profile) {
				continue
			}
			if name := squash(html.UnescapeString(string(page[textStart : textStart+textEnd]))); name != "" {
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

// stateName reads the author's fullname from the SPA's state JSON.
func stateName(page []byte, login string) string {
	key, err := json.Marshal(login)
	if err != nil {
		return ""
	}
	marker := append(append([]byte(`"alias":`), key...), []byte(`,"fullname":"`)...)
	i := bytes.Index(page, marker)
	if i < 0 {
		return ""
	}
	start := i + len(marker) - 1 // the opening quote
	for j := start + 1; j < len(page); j++ {
		switch page[j] {
		case '\\':
			j++
		case '"':
			var name string
			if json.Unmarshal(page[start:j+1], &name) != nil {
				return ""
			}
			return squash(name)
		}
	}
	return ""
}
