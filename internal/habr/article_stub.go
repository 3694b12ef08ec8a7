package habr

import (
	"fmt"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// stubReason recognises the pages Habr serves instead of an article (see
// shared/research/habr.md §2) and says which kind of stub the page is, or
// returns "" for a page that is not a known stub.
//
// No real stub page was available; the markers come from userscripts and
// scrapers that detect them: the SPA's error screen div.tm-error-message
// (code, title, body), the regional block .tm-regional-restriction__title,
// and the legacy #reg-wrapper notice.
func stubReason(doc *goquery.Document) string {
	if r := doc.Find(".tm-regional-restriction"); r.Length() > 0 {
		return fmt.Sprintf("stub of a region-restricted publication (%q)", squash(r.Find(".tm-regional-restriction__title").Text()))
	}
	if e := doc.Find(".tm-error-message").First(); e.Length() > 0 {
		code := squash(e.Find(".tm-error-message__code").Text())
		title := squash(e.Find(".tm-error-message__title").Text())
		body := squash(e.Find(".tm-error-message__body").Text())
		return fmt.Sprintf("stub of %s (error %s: %q)", stubKind(code, title+" "+body), code, title)
	}
	if w := doc.Find("#reg-wrapper"); w.Length() > 0 {
		title := squash(w.Find("h1").First().Text())
		return fmt.Sprintf("stub of %s (%q)", stubKind("", title+" "+w.Find("p").Text()), title)
	}
	return ""
}

// stubKinds classify a stub by its HTTP-like code or by words of its text,
// in Russian and English as Habr shows them; the first match wins, so the
// more specific kinds come first.
var stubKinds = []struct {
	kind  string
	codes []string
	words []string
}{
	{"a publication on moderation", nil, []string{"модерац", "moderation"}},
	{"a hidden publication", nil, []string{"доступ к публикации закрыт", "access to this post is restricted", "черновик", "draft"}},
	{"a paywalled publication", []string{"402"}, []string{"подписк", "subscription", "premium", "платн"}},
	{"a region-restricted publication", []string{"451"}, []string{"регион", "region"}},
	{"a deleted or missing publication", []string{"404", "410"}, []string{"не найден", "not found", "удал", "deleted"}},
	{"a publication closed to this reader", []string{"403"}, []string{"доступ закрыт", "access denied"}},
}

func stubKind(code, text string) string {
	text = strings.ToLower(text)
	for _, k := range stubKinds {
		for _, w := range k.words {
			if strings.Contains(text, w) {
				return k.kind
			}
		}
		for _, c := range k.codes {
			if code == c {
				return k.kind
			}
		}
	}
	return "an error page"
}

// squash collapses runs of white space, as a browser shows text.
func squash(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
