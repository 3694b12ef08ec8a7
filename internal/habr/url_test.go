package habr

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonicalURL(t *testing.T) {
	tests := []struct {
		raw       string
		id        int64
		canonical string
	}{
		// Links as the fixtures' feeds give them, utm order of every era.
		{"https://habrahabr.ru/post/348200/?utm_source=habrahabr&utm_medium=rss&utm_campaign=348200",
			348200, "https://habr.com/post/348200/"},
		{"https://habr.com/ru/post/461617/?utm_source=habrahabr&utm_medium=rss&utm_campaign=461617",
			461617, "https://habr.com/ru/post/461617/"},
		{"https://habr.com/ru/articles/1089530/?utm_campaign=1089530&utm_source=habrahabr&utm_medium=rss",
			1089530, "https://habr.com/ru/articles/1089530/"},
		// Every article path shape, with and without the trailing slash.
		{"https://habr.com/ru/companies/yandex/articles/761572/", 761572, "https://habr.com/ru/companies/yandex/articles/761572/"},
		{"https://habr.com/ru/company/parallels/blog/462783/", 462783, "https://habr.com/ru/company/parallels/blog/462783/"},
		{"https://habr.com/ru/news/t/555555/", 555555, "https://habr.com/ru/news/t/555555/"},
		{"https://habr.com/ru/news/777777", 777777, "https://habr.com/ru/news/777777/"},
		{"https://habr.com/ru/companies/x/news/777778/", 777778, "https://habr.com/ru/companies/x/news/777778/"},
		{"https://habr.com/en/post/453232/", 453232, "https://habr.com/en/post/453232/"},
		{"https://habr.com/post/1000", 1000, "https://habr.com/post/1000/"},
		{"https://habr.com/ru/sandbox/123456/", 123456, "https://habr.com/ru/sandbox/123456/"},
		// Fragments, other hosts of Habr, http, surrounding space.
		{"https://habr.com/ru/articles/769102/#habracut", 769102, "https://habr.com/ru/articles/769102/"},
		{"https://m.habr.com/ru/company/parallels/blog/462783/", 462783, "https://habr.com/ru/company/parallels/blog/462783/"},
		{"http://geektimes.ru/post/300211/", 300211, "https://habr.com/post/300211/"},
		{"https://www.habr.com/ru/post/1/", 1, "https://habr.com/ru/post/1/"},
		{"  https://HABR.com/ru/post/2/\n", 2, "https://habr.com/ru/post/2/"},
	}
	for _, tt := range tests {
		id, canonical, err := CanonicalURL(tt.raw)
		if err != nil {
			t.Errorf("CanonicalURL(%q): %v", tt.raw, err)
			continue
		}
		if id != tt.id || canonical != tt.canonical {
			t.Errorf("CanonicalURL(%q) = %d, %q; want %d, %q", tt.raw, id, canonical, tt.id, tt.canonical)
		}
	}
}

func TestCanonicalURLRejects(t *testing.T) {
	tests := []struct {
		raw  string
		want string // a fragment of the error message
	}{
		{"https://example.com/ru/post/1/", `host "example.com"`},
		{"https://habr.com.evil.example/ru/post/1/", "is not habr.com"},
		{"https://habr.com/ru/hubs/go/", "not an article path"},
		{"https://habr.com/ru/users/medsurg/publications/articles/", "not an article path"},
		{"https://habr.com/ru/post/1/comments/", "not an article path"},
		{"https://habr.com/ru/post/abc/", "not a positive number"},
		{"https://habr.com/ru/post/0/", "not a positive number"},
		{"https://habr.com/ru/post/0123/", "not a positive number"},
		{"https://habr.com/ru/post/99999999999999999999/", "not a positive number"},
		{"ftp://habr.com/ru/post/1/", "want an http(s) url"},
		{"/ru/post/1/", "want an http(s) url"},
		{"https://user:secret@habr.com/ru/post/1/", "credentials"},
		{"https://habr.com/ru/post/%zz/", "invalid URL escape"},
		{"", "want an http(s) url"},
	}
	for _, tt := range tests {
		_, _, err := CanonicalURL(tt.raw)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CanonicalURL(%q) error = %v, want one containing %q", tt.raw, err, tt.want)
		}
		if strings.Contains(tt.raw, "secret") && err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CanonicalURL(%q) error leaks the password: %v", tt.raw, err)
		}
	}
	if _, _, err := CanonicalURL("https://habr.com/ru/post/x1/"); !errors.Is(err, errBadID) {
		t.Errorf("non-numeric id: error %v does not wrap errBadID", err)
	}
}

func TestFeedPath(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"/ru/rss/hubs/go/articles/?fl=ru", "/ru/rss/hubs/go/articles/?fl=ru", ""},
		{" https://habr.com/en/rss/news/?fl=en&limit=50 ", "/en/rss/news/?fl=en&limit=50", ""},
		{"https://www.habr.com/ru/rss/articles/", "/ru/rss/articles/", ""},
		{"https://example.com/ru/rss/articles/", "", "want a path on Habr"},
		{"ru/rss/articles/", "", "want a path on Habr"},
		{"//example.com/rss/", "", "want a path on Habr"},
		{"https://user:pw@habr.com/ru/rss/", "", "credentials"},
	}
	for _, tt := range tests {
		got, err := FeedPath(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("FeedPath(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("FeedPath(%q): error repeats the password: %v", tt.in, err)
		}
	}
}
