package habr

import "testing"

func TestAuthorName(t *testing.T) {
	const article = `<html><body><article><a href="/ru/users/alice/">alice</a></article>`
	tests := []struct {
		name, page, want string
	}{
		{"2021 card", article + `<div class="tm-user-card__title"><span class="tm-user-card__name">Алиса &amp; Co</span>` +
			`<a href="/ru/users/alice/" class="tm-user-card__nickname">@alice</a></div>`, "Алиса & Co"},
		{"2025 card", article + `<a href="/ru/users/alice/" class="tm-user-card__userpic"></a><div class="tm-user-card__title">` +
			`<span class="tm-user-card__name tm-user-card__name_variant-article">Алиса Петрова</span></div>`, "Алиса Петрова"},
		{"legacy card", article + `<div class="user-info__links"><a href="https://habr.com/ru/users/alice/" class="user-info__fullname">Alice B.</a></div>`, "Alice B."},
		{"the login in the name's place", article + `<span class="tm-user-card__name">alice</span><a href="/ru/users/alice/">@alice</a>`, ""},
		{"another user's card", article + `<span class="tm-user-card__name">Боб</span><a href="/ru/users/bob/">@bob</a>`, ""},
		{"a name class that is only a prefix", article + `<span class="tm-user-card__name_variant-article">Боб</span><a href="/ru/users/alice/">@alice</a>`, ""},
		{"no card", article + `<p>comments</p>`, ""},
	}
	for _, tt := range tests {
		if got := authorName(afterArticle([]byte(tt.page)), "alice"); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
