package habr

import (
	"strings"
	"testing"
)

// Where pollPage puts its poll.
const (
	inArticle = iota // inside the article, after the body container (the synthetic 2025 page)
	afterIt          // right after the article (m.habr.com)
	inBody           // inside the body container, after the text (the Vue site since 2021)
)

// pollPage is an article page of the Vue layout with a results poll where placement says. The
// results view writes percentage, label and votes with no white space between them, as the
// site does since 2021.
func pollPage(placement int) []byte {
	poll := `<div class="tm-article-poll"><div class="tm-article-poll__header">Какой *язык* лучше?</div>` +
		`<div class="tm-article-poll__answers"><div class="tm-article-poll__answer"><div class="tm-article-poll__answer-data">` +
		`<span class="tm-article-poll__answer-percent">60%</span> <span class="tm-article-poll__answer-label"><span>Go</span></span>` +
		`<span class="tm-article-poll__answer-votes">6</span></div></div>` +
		`<div class="tm-article-poll__answer"><div class="tm-article-poll__answer-data"><span class="tm-article-poll__answer-percent">40%</span>` +
		`<span class="tm-article-poll__answer-label"><span>1. Rust</span></span><span class="tm-article-poll__answer-votes">4</span></div></div></div>` +
		`<div class="tm-article-poll__stats"><span>Проголосовали 10 пользователей.</span><span>Воздержался 1 пользователь.</span></div></div>`
	var body, in, out string
	switch placement {
	case inArticle:
		in = poll
	case afterIt:
		out = poll
	case inBody:
		body = poll
	}
	return []byte(`<!DOCTYPE html><html><head><meta property="og:title" content="T"></head><body><main>` +
		`<article class="tm-article-presenter__content"><div class="tm-article-presenter__header">` +
		`<a class="tm-user-info__username" href="/ru/users/someone/">someone</a></div><h1 class="tm-title"><span>T</span></h1>` +
		`<a class="tm-publication-hub__link" href="/ru/hubs/go/"><span>Go</span></a>` +
		`<div id="post-content-body"><div class="article-formatted-body"><p>Текст</p></div>` + body + `</div>` + in + `</article>` + out +
		`<section class="comments"><article class="comment">a comment</article></section></main></body></html>`)
}

func TestPolls(t *testing.T) {
	want := "Текст\n\n**Какой \\*язык\\* лучше?**\n\n- [ ] Go — 6 (60%)\n- [ ] 1. Rust — 4 (40%)\n\n" +
		"Проголосовали 10 пользователей. Воздержался 1 пользователь.\n"
	e := NewExtractor()
	for _, placement := range []int{inArticle, afterIt, inBody} {
		page := pollPage(placement)
		a, err := e.Extract("https://habr.com/ru/articles/1/", page)
		if err != nil || a.Markdown != want {
			t.Errorf("poll placement %d: %v\n%s\nwant\n%s", placement, err, a.Markdown, want)
		}
		// The fast path reads the poll inside the article, and leaves a page with one after
		// the article to the whole-page parse.
		if _, ok := e.extractFast("https://habr.com/ru/articles/1/", page, true); ok == (placement == afterIt) {
			t.Errorf("poll placement %d: fast path taken = %v", placement, ok)
		}
	}
	if got := renderedWords(t, want); got["Rust"] != 1 || got["Go"] != 1 || strings.Contains(want, "[x]") {
		t.Errorf("rendered poll words = %v", got)
	}
}

// The marker between the body and its polls cannot cut a body or a poll whose text holds the
// same private-use character.
func TestPollMarkerInText(t *testing.T) {
	page := strings.Replace(string(pollPage(inArticle)), "<p>Текст</p>", "<p>Текст \uE001 и \uE000</p>", 1)
	page = strings.Replace(page, "<span>Go</span></span>", "<span>Go \uE001</span></span>", 1)
	a, err := NewExtractor().Extract("https://habr.com/ru/articles/1/", []byte(page))
	if err != nil || !strings.HasPrefix(a.Markdown, "Текст \uE001 и \uE000\n\n**Какой") || !strings.Contains(a.Markdown, "- [ ] Go \uE001 — 6 (60%)") {
		t.Errorf("markdown = %q, %v", a.Markdown, err)
	}
}

// A poll's totals are kept whatever element holds them: a layout whose totals line is not in
// .tm-article-poll__stats (the held-out page of issue 31 lost "Проголосовали 142 пользователя.")
// still shows it under the answers, and the question and answers are never taken for totals.
func TestPollTotalsWhereverTheyStand(t *testing.T) {
	const stats = `<div class="tm-article-poll__stats"><span>Проголосовали 10 пользователей.</span><span>Воздержался 1 пользователь.</span></div>`
	tests := []struct {
		name, totals, want string
	}{
		{"a footer of sentences side by side",
			`<div class="tm-article-poll__footer"><span>Проголосовали 142 пользователя.</span><span>Воздержались 3 пользователя.</span><button>Голосовать</button></div>`,
			"Проголосовали 142 пользователя. Воздержались 3 пользователя."},
		{"a votes count with the number in its own element",
			`<div class="tm-poll__votes-count">Проголосовали <b>142</b> пользователя.</div>`,
			"Проголосовали 142 пользователя."},
		{"bare text in the block", `Проголосовали 142 пользователя.`, "Проголосовали 142 пользователя."},
		{"the English site", `<div class="tm-article-poll__total"><span>142 users voted.</span> <span>7 users abstained.</span></div>`,
			"142 users voted. 7 users abstained."},
	}
	e := NewExtractor()
	for _, placement := range []int{inArticle, afterIt, inBody} {
		for _, tt := range tests {
			page := strings.Replace(string(pollPage(placement)), stats, tt.totals, 1)
			page = strings.Replace(page, `answer-label"><span>Go</span>`, `answer-label"><span>Go (voted by 6)</span>`, 1)
			a, err := e.Extract("https://habr.com/ru/articles/1/", []byte(page))
			want := "Текст\n\n**Какой \\*язык\\* лучше?**\n\n- [ ] Go (voted by 6) — 6 (60%)\n- [ ] 1. Rust — 4 (40%)\n\n" + tt.want + "\n"
			if err != nil || a.Markdown != want {
				t.Errorf("%s, placement %d: %v\n%s\nwant\n%s", tt.name, placement, err, a.Markdown, want)
			}
		}
	}
}
