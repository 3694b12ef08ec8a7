package habr

import (
	"errors"
	"io/fs"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"

	recorded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// fixtures is the Habr collection the fake serves, embedded (internal/fakes/fixtures/habr).
var fixtures = recorded.Habr()

func parseFeedFile(t *testing.T, name string) ([]FeedItem, []ItemError) {
	t.Helper()
	f, err := fixtures.Open(path.Join("rss", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	items, bad, err := ParseFeed(f)
	if err != nil {
		t.Fatalf("ParseFeed(%s): %v", name, err)
	}
	return items, bad
}

func TestParseFeedFixtures(t *testing.T) {
	tests := []struct {
		file  string
		count int
		// first and last items, in full
		first, last FeedItem
	}{
		{
			file:  "habrahabr-ru-rss-interesting-2018-02.xml",
			count: 20,
			first: FeedItem{
				ID:           348200,
				URL:          "https://habr.com/post/348200/",
				Title:        "[Перевод] Шон Пирс: настоящий лидер",
				Author:       "IsaNesquik",
				PublishedAt:  time.Date(2018, 2, 2, 23, 38, 55, 0, time.UTC),
				PublishedRaw: "Fri, 02 Feb 2018 23:38:55 GMT",
				Categories:   []string{"Системы управления версиями", "Программирование", "Git", "rip", "git"},
			},
			last: FeedItem{
				ID:           348118,
				URL:          "https://habr.com/post/348118/",
				Title:        "Расширяем функционал Ansible с помощью модулей",
				Author:       "Berlic",
				PublishedAt:  time.Date(2018, 2, 2, 6, 39, 12, 0, time.UTC),
				PublishedRaw: "Fri, 02 Feb 2018 06:39:12 GMT",
				Categories: []string{"Серверное администрирование", "IT-инфраструктура", "DevOps",
					"Блог компании D2C.io", "ansible", "devops", "infrastructure as code"},
			},
		},
		{
			file:  "habr-rss-all-2019-07.xml",
			count: 20,
			first: FeedItem{
				ID:           461617,
				URL:          "https://habr.com/ru/post/461617/",
				Title:        "[Из песочницы] Теория успешного стартапа",
				Author:       "TimurBidzhiev",
				PublishedAt:  time.Date(2019, 7, 28, 12, 58, 8, 0, time.UTC),
				PublishedRaw: "Sun, 28 Jul 2019 12:58:08 GMT",
				Categories:   []string{"Управление проектами", "Развитие стартапа", "Бизнес-модели", "стартапы", "проекты", "бизнес", "обучение"},
			},
			last: FeedItem{
				ID:           461563,
				URL:          "https://habr.com/ru/post/461563/",
				Title:        "Самодельная лазерная установка на парах меди “Lightsaber” – часть 3, заключительная",
				Author:       "Laserbuilder",
				PublishedAt:  time.Date(2019, 7, 27, 13, 4, 45, 0, time.UTC),
				PublishedRaw: "Sat, 27 Jul 2019 13:04:45 GMT",
				Categories:   []string{"DIY или Сделай сам", "Лазеры", "лазер", "лазер на парах меди", "неон", "УЛ-102", "лазерная трубка", "ремонт"},
			},
		},
		{
			file:  "habr-rss-user-medsurg-articles-abridged.xml",
			count: 2,
			first: FeedItem{
				ID:           1089530,
				URL:          "https://habr.com/ru/articles/1089530/",
				Title:        "Первый иск за «сбежавших» ИИ-агентов: кто отвечает, если агент сам взломал чужую систему",
				Author:       "MedSurg",
				PublishedAt:  time.Date(2026, 10, 2, 9, 24, 41, 0, time.UTC),
				PublishedRaw: "Fri, 02 Oct 2026 09:24:41 GMT",
				Categories:   []string{"Информационная безопасность", "Искусственный интеллект", "Машинное обучение", "openai"},
			},
			last: FeedItem{
				ID:           1088564,
				URL:          "https://habr.com/ru/articles/1088564/",
				Title:        "Нейросеть написала PR, тесты зелёные, а поведение изменилось. Как я научил CI это ловить",
				Author:       "MedSurg",
				PublishedAt:  time.Date(2026, 9, 30, 12, 31, 16, 0, time.UTC),
				PublishedRaw: "Wed, 30 Sep 2026 12:31:16 GMT",
				Categories:   []string{"Python", "Тестирование IT-систем", "DevOps", "python"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			items, bad := parseFeedFile(t, tt.file)
			if len(bad) != 0 {
				t.Errorf("bad items: %v", bad)
			}
			if len(items) != tt.count {
				t.Fatalf("got %d items, want %d", len(items), tt.count)
			}
			if !reflect.DeepEqual(items[0], tt.first) {
				t.Errorf("first item\n got %+v\nwant %+v", items[0], tt.first)
			}
			if last := items[len(items)-1]; !reflect.DeepEqual(last, tt.last) {
				t.Errorf("last item\n got %+v\nwant %+v", last, tt.last)
			}
			seen := map[int64]bool{}
			for _, it := range items {
				if seen[it.ID] {
					t.Errorf("id %d appears twice", it.ID)
				}
				seen[it.ID] = true
				if strings.Contains(it.URL, "utm_") || it.PublishedAt.Location() != time.UTC {
					t.Errorf("item %d: url %q, time %v", it.ID, it.URL, it.PublishedAt)
				}
			}
		})
	}
}

// A hub and a tag can share a name; categories are kept as given.
func TestParseFeedKeepsRepeatedCategories(t *testing.T) {
	items, _ := parseFeedFile(t, "habrahabr-ru-rss-interesting-2018-02.xml")
	want := []string{"Программирование", "C++", "C", "перевод", "rvalue", "lvalue", "C++", "C"}
	if got := items[1].Categories; !reflect.DeepEqual(got, want) {
		t.Errorf("item 2 categories = %q, want %q", got, want)
	}
}

// item builds one RSS <item>; an empty field is left out.
func item(title, link, pubDate string) string {
	var b strings.Builder
	b.WriteString("<item>")
	if title != "" {
		b.WriteString("<title>" + title + "</title>")
	}
	if link != "" {
		b.WriteString("<guid>" + link + "</guid><link>" + link + "</link>")
	}
	if pubDate != "" {
		b.WriteString("<pubDate>" + pubDate + "</pubDate>")
	}
	b.WriteString("</item>")
	return b.String()
}

func feed(items ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` +
		`<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>t</title>` +
		strings.Join(items, "\n") + `</channel></rss>`
}

const goodDate = "Mon, 05 Feb 2018 10:12:31 GMT"

func TestParseFeedSkipsBadItems(t *testing.T) {
	in := feed(
		item("ok 1", "https://habr.com/ru/post/1/", goodDate),
		item("no link", "", goodDate),
		item("off-site", "https://example.com/ru/post/3/", goodDate),
		item("bad date", "https://habr.com/ru/post/4/", "yesterday"),
		item("not numeric", "https://habr.com/ru/post/abc/", goodDate),
		item("garbled", "ht!tp:://habr", goodDate),
		item("unknown zone", "https://habr.com/ru/post/7/", "Mon, 05 Feb 2018 10:12:31 MSK"),
		item("no date", "https://habr.com/ru/post/8/", ""),
		item("ok 9", "https://habr.com/ru/post/9/", "Mon, 05 Feb 2018 13:12:31 +0300"),
	)
	items, bad, err := ParseFeed(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].ID != 1 || items[1].ID != 9 {
		t.Fatalf("items = %+v, want ids 1 and 9", items)
	}
	// "+0300" is converted to UTC; the raw string is kept.
	if want := time.Date(2018, 2, 5, 10, 12, 31, 0, time.UTC); !items[1].PublishedAt.Equal(want) ||
		items[1].PublishedAt.Location() != time.UTC || items[1].PublishedRaw != "Mon, 05 Feb 2018 13:12:31 +0300" {
		t.Errorf("item 9 time = %v (raw %q)", items[1].PublishedAt, items[1].PublishedRaw)
	}

	wantBad := []struct {
		index int
		msg   string
	}{
		{2, "no link"},
		{3, `host "example.com"`},
		{4, `"yesterday" is not an RFC 1123 date`},
		{5, "not a positive number"},
		{6, "article url"},
		{7, `unsupported time zone "MSK"`},
		{8, "no pubDate"},
	}
	if len(bad) != len(wantBad) {
		t.Fatalf("bad = %v, want %d entries", bad, len(wantBad))
	}
	for i, w := range wantBad {
		b := bad[i]
		if b.Index != w.index || !strings.Contains(b.Error(), w.msg) {
			t.Errorf("bad[%d] = %d %q, want index %d and message containing %q", i, b.Index, b.Error(), w.index, w.msg)
		}
	}
	if !errors.Is(bad[3], errBadID) {
		t.Errorf("bad[3] = %v, want it to wrap errBadID", bad[3])
	}
	var asError error = bad[0] // an ItemError is an error as a value, too
	if !strings.Contains(asError.Error(), "feed item 2") {
		t.Errorf("ItemError.Error() = %q", asError.Error())
	}
	if bad[1].Link != "https://example.com/ru/post/3/" || bad[1].GUID != "https://example.com/ru/post/3/" {
		t.Errorf("bad[1] keeps link %q and guid %q as received", bad[1].Link, bad[1].GUID)
	}
}

func TestParseFeedEntities(t *testing.T) {
	in := feed(
		// HTML entities that XML does not define, a bare ampersand, a CDATA
		// title with markup, and a link whose query uses a raw "&".
		item("C&nbsp;&amp;&nbsp;C++ &laquo;AT&T&raquo; &#8212; &mdash;", "https://habr.com/ru/post/1/?a=1&utm_source=x", goodDate),
		item("<![CDATA[<b>bold</b> & co]]>", "https://habr.com/ru/post/2/?utm_source=habrahabr&amp;utm_medium=rss", goodDate),
	)
	items, bad, err := ParseFeed(strings.NewReader(in))
	if err != nil || len(bad) != 0 {
		t.Fatalf("err = %v, bad = %v", err, bad)
	}
	if want := "C\u00a0&\u00a0C++ «AT&T» — —"; items[0].Title != want {
		t.Errorf("title = %q, want %q", items[0].Title, want)
	}
	if want := "<b>bold</b> & co"; items[1].Title != want {
		t.Errorf("title = %q, want %q", items[1].Title, want)
	}
	if items[0].URL != "https://habr.com/ru/post/1/" || items[1].URL != "https://habr.com/ru/post/2/" {
		t.Errorf("urls = %q, %q", items[0].URL, items[1].URL)
	}
}

func TestParseFeedEmptyFeed(t *testing.T) {
	items, bad, err := ParseFeed(strings.NewReader(feed()))
	if err != nil || len(items) != 0 || len(bad) != 0 {
		t.Errorf("ParseFeed(empty channel) = %v, %v, %v; want nothing", items, bad, err)
	}
}

func TestParseFeedUnreadable(t *testing.T) {
	good := item("ok", "https://habr.com/ru/post/1/", goodDate)
	tests := []struct {
		name      string
		in        string
		wantItems int // items read before the feed broke off
		wantMsg   string
		line      int
		notRSS    bool
	}{
		{"empty", "", 0, "no XML root element", 1, false},
		{"json", `{"items": []}`, 0, "no XML root element", 1, false},
		{"html page", "<!DOCTYPE html>\n<html><body>Хабр</body></html>", 0, "root element is <html>", 2, true},
		{"atom", `<feed xmlns="http://www.w3.org/2005/Atom"></feed>`, 0, "root element is <feed>", 1, true},
		{"rss without channel", `<rss version="2.0"></rss>`, 0, "has no <channel>", 1, true},
		{"truncated inside an item", strings.TrimSuffix(feed(good, good), "</item></channel></rss>"), 1, "item 2: XML syntax error on line 2: unexpected EOF", 2, false},
		{"truncated after an item", "<rss><channel>\n" + good + "\n" + good + "\n", 2, "unexpected EOF", 4, false},
		{"garbage inside", "<rss><channel>\n" + good + "\n<item><title>x</tit\n", 1, "item 2", 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, _, err := ParseFeed(strings.NewReader(tt.in))
			var fe *FeedError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FeedError", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantMsg)
			}
			if fe.Line != tt.line {
				t.Errorf("line = %d, want %d (err %v)", fe.Line, tt.line, err)
			}
			if errors.Is(err, ErrNotRSS) != tt.notRSS {
				t.Errorf("errors.Is(err, ErrNotRSS) = %v, want %v", !tt.notRSS, tt.notRSS)
			}
			if len(items) != tt.wantItems {
				t.Errorf("got %d items before the break, want %d", len(items), tt.wantItems)
			}
		})
	}
}

func FuzzParseFeed(f *testing.F) {
	for _, name := range []string{"habr-rss-user-medsurg-articles-abridged.xml", "habr-rss-all-2019-07.xml"} {
		b, err := fs.ReadFile(fixtures, path.Join("rss", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(feed(item("a&b", "https://habr.com/ru/post/1/", goodDate), item("", "x", ""))))
	f.Add([]byte("<rss><channel><item><link>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		items, bad, err := ParseFeed(strings.NewReader(string(b)))
		for _, it := range items {
			if it.ID <= 0 || !strings.HasPrefix(it.URL, "https://habr.com/") {
				t.Errorf("accepted item %+v", it)
			}
		}
		for _, e := range bad {
			if e.Err == nil || e.Index <= 0 {
				t.Errorf("bad item without error or position: %+v", e)
			}
		}
		var fe *FeedError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("err %v is not a *FeedError", err)
		}
	})
}
