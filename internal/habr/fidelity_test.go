package habr

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/PuerkitoBio/goquery"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"
)

// The fidelity test reads every golden Markdown the way a reader sees it: rendered by goldmark
// (CommonMark + GFM, raw HTML passed through, as our spoilers and complex tables need), then the
// rendered page's visible words, in reading order, with the breaks between lines and blocks. It
// compares them with the words of the article in the source page, read the same way: its body
// container and its polls, as a browser shows them (captions, spoilers and table cells
// included; scripts, styles and form controls not), untouched by the extractor's cleanup. The
// two must be equal: the same words, in the same order, broken into lines at the same places.
//
// What the page shows without text is read as what stands for it in the Markdown:
//   - a formula image, as its TeX (the v2 editor's source attribute, the v1 editor's alt), a
//     display formula on lines of its own;
//   - an embedded player (an iframe, a Flash-era embed, a video, or the div.tm-iframe_temp Habr's
//     script turns into an iframe), as
//     one token naming what it plays (embedKey), on a line of its own; a rendered link whose
//     text is the extractor's text for an embed is read as the token of its URL;
//   - a poll answer of the Vue site, whose row shows percentage, label and votes, in the order
//     the Markdown's task item has them: label, votes, percentage.

// lineBreak is the token of a break between lines or blocks; runs of breaks count as one.
const lineBreak = "¶"

// invisible are the elements whose text a reader never sees as text.
var invisible = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "head": true,
	"button": true, "select": true, "textarea": true, "input": true, "iframe": true,
}

// breaking are the elements that start and end lines where a browser shows them.
var breaking = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true, "dd": true,
	"details": true, "div": true, "dl": true, "dt": true, "figcaption": true, "figure": true,
	"footer": true, "form": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true,
	"h6": true, "header": true, "hr": true, "li": true, "main": true, "math": true, "ol": true,
	"p": true, "pre": true, "section": true, "summary": true, "table": true, "tbody": true,
	"td": true, "tfoot": true, "th": true, "thead": true, "tr": true, "ul": true, "label": true,
}

// reading collects what a reader reads: words, breaks, and embed tokens.
type reading struct {
	tokens []string
	text   strings.Builder // the text since the last break, split into words at the next one
	page   bool            // reading a source page, not goldmark's rendering
}

func (r *reading) flush() {
	r.tokens = append(r.tokens, strings.FieldsFunc(r.text.String(), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })...)
	r.text.Reset()
}

func (r *reading) lineBreak() {
	r.flush()
	if n := len(r.tokens); n > 0 && r.tokens[n-1] != lineBreak {
		r.tokens = append(r.tokens, lineBreak)
	}
}

// token adds a token that stands for something without words, on a line of its own.
func (r *reading) token(t string) {
	r.lineBreak()
	r.tokens = append(r.tokens, t)
	r.lineBreak()
}

func (r *reading) words() []string {
	r.flush()
	t := r.tokens
	for len(t) > 0 && t[0] == lineBreak {
		t = t[1:]
	}
	for len(t) > 0 && t[len(t)-1] == lineBreak {
		t = t[:len(t)-1]
	}
	return t
}

// read walks n; inPre says whether its text keeps its line breaks.
func (r *reading) read(n *html.Node, inPre bool) {
	switch n.Type {
	case html.TextNode:
		if !inPre {
			r.text.WriteString(n.Data)
			return
		}
		for i, line := range strings.Split(n.Data, "\n") {
			if i > 0 {
				r.lineBreak()
			}
			r.text.WriteString(line)
		}
		return
	case html.ElementNode:
	default:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			r.read(c, inPre)
		}
		return
	}
	if r.page {
		if done := r.readPageElement(n); done {
			return
		}
	} else if n.Data == "a" {
		if href, ok := attr(n, "href"); ok && (textOf(n) == embedVideo || textOf(n) == embedOther) {
			r.token(embedKey(href))
			return
		}
	}
	if r.page && inPre && junk[n.Data] {
		// HTML typed into a code block unescaped: the reader is shown it as code, tags and
		// attributes included.
		r.text.WriteString(" " + n.Data + " ")
		for _, a := range n.Attr {
			r.text.WriteString(" " + a.Key + " " + a.Val + " ")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			r.read(c, inPre)
		}
		if n.Data != "input" {
			r.text.WriteString(" " + n.Data + " ")
		}
		return
	}
	if r.page && n.Data == "script" {
		if key := scriptEmbedKey(n); key != "" {
			r.token(key)
		}
		return
	}
	if invisible[n.Data] {
		return
	}
	if breaking[n.Data] {
		r.lineBreak()
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.read(c, inPre || n.Data == "pre")
	}
	if breaking[n.Data] {
		r.lineBreak()
	}
}

// readPageElement reads the elements of a source page that show no text (formulas, embeds)
// or show it in another order than the Markdown (poll answers), and reports whether it did.
func (r *reading) readPageElement(n *html.Node) bool {
	switch {
	case n.Data == "img" && (hasClass(n, "formula") || hasAttr(n, "data-tex")):
		tex, ok := attr(n, "source")
		if !ok {
			tex, _ = attr(n, "alt")
		}
		display := !hasClass(n, "inline") && (hasClass(n, "formula") || mustAttr(n, "data-tex") == "display")
		if display {
			r.lineBreak()
		}
		r.text.WriteString(" " + tex + " ")
		if display {
			r.lineBreak()
		}
		return true
	case n.Data == "iframe" || n.Data == "embed" || n.Data == "video" || n.Data == "div" && hasClass(n, "tm-iframe_temp"):
		src, _ := attr(n, "src")
		if src == "" {
			src, _ = attr(n, "data-src")
		}
		if source := findElement(n, "source"); src == "" && source != nil {
			src, _ = attr(source, "src")
		}
		if src = strings.TrimSpace(src); src != "" {
			r.token(embedKey(src))
		}
		return true
	case n.Data == "div" && hasClass(n, "tm-article-poll__answer-data"):
		r.lineBreak()
		for _, class := range []string{"tm-article-poll__answer-label", "tm-article-poll__answer-votes", "tm-article-poll__answer-percent"} {
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && hasClass(c, class) {
					r.text.WriteString(" ")
					r.read(c, false)
					r.text.WriteString(" ")
				}
			}
		}
		r.lineBreak()
		return true
	}
	return false
}

func hasAttr(n *html.Node, key string) bool { _, ok := attr(n, key); return ok }

func mustAttr(n *html.Node, key string) string { v, _ := attr(n, key); return v }

// embedKey names what an embed plays, from its player's URL on the page or from the link the
// Markdown has for it: a YouTube video by its id and the second it starts at, and its playlist;
// a YouTube playlist by its id; anything else by its absolute URL, query and fragment included.
func embedKey(raw string) string {
	raw = strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(raw, "//"):
		raw = "https:" + raw
	case strings.HasPrefix(raw, "/"):
		raw = habrRoot + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "embed:" + raw
	}
	host := strings.TrimPrefix(strings.TrimPrefix(u.Hostname(), "www."), "m.")
	if host != "youtube.com" && host != "youtube-nocookie.com" {
		return "embed:" + raw
	}
	if id, ok := strings.CutPrefix(u.Path, "/v/"); ok { // the Flash player: /v/ID&start=N
		id, rest, _ := strings.Cut(id, "&")
		u.Path, u.RawQuery = "/embed/"+id, rest+"&"+u.RawQuery
	}
	q := u.Query()
	video := q.Get("v")
	if id, ok := strings.CutPrefix(u.Path, "/embed/"); ok {
		video = id
	}
	start := q.Get("t")
	if start == "" {
		start = q.Get("start")
	}
	start = strings.TrimSuffix(start, "s")
	if video == "videoseries" || u.Path == "/playlist" {
		return "embed:youtube-playlist:" + q.Get("list")
	}
	return fmt.Sprintf("embed:youtube:%s@%s/%s", video, start, q.Get("list"))
}

// scriptEmbedKey names what a script-made embed shows: a Telegram post by its path, a gist by
// its path and the file it shows (GitHub's anchor of a file is "file-" and its name, lower case,
// each run of characters other than letters, digits, "-" and "_" as one "-"); "" for any other
// script.
func scriptEmbedKey(n *html.Node) string {
	if post, ok := attr(n, "data-telegram-post"); ok {
		return embedKey("https://t.me/" + post)
	}
	src, _ := attr(n, "src")
	u, err := url.Parse(src)
	if err != nil || u.Host != "gist.github.com" {
		return ""
	}
	anchor := ""
	if file := u.Query().Get("file"); file != "" {
		anchor = "#file-" + strings.Trim(regexp.MustCompile(`[^a-z0-9_-]+`).ReplaceAllString(strings.ToLower(file), "-"), "-")
	}
	return embedKey("https://gist.github.com" + strings.TrimSuffix(u.Path, ".js") + anchor)
}

// renderedReading renders Markdown with goldmark and reads it.
func renderedReading(t testing.TB, md string) []string {
	t.Helper()
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	var buf bytes.Buffer
	if err := gm.Convert([]byte(md), &buf); err != nil {
		t.Fatalf("goldmark: %v", err)
	}
	doc, err := html.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	r := &reading{}
	r.read(doc, false)
	return r.words()
}

// renderedWords renders Markdown with goldmark and counts its visible words.
func renderedWords(t testing.TB, md string) map[string]int {
	t.Helper()
	words := map[string]int{}
	for _, w := range renderedReading(t, md) {
		if w != lineBreak {
			words[w]++
		}
	}
	return words
}

// articleReading reads the article in a source page: its body container, then the polls
// outside it, untouched by the extractor's cleanup.
func articleReading(t testing.TB, page []byte) []string {
	t.Helper()
	root, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	doc := goquery.NewDocumentFromNode(root)
	body, _ := findBody(doc)
	if body == nil {
		t.Fatal("no body container")
	}
	r := &reading{page: true}
	r.read(body.Nodes[0], false)
	for _, n := range doc.FindMatcher(pollBlocks).Nodes {
		if !contains(body.Nodes[0], n) {
			r.lineBreak()
			r.read(n, false)
		}
	}
	return r.words()
}

// firstDifference returns "" when want and got are equal, or where they part, with the tokens
// around it.
func firstDifference(want, got []string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	if i == len(want) && i == len(got) {
		return ""
	}
	around := func(s []string) string {
		return strings.Join(s[max(0, i-8):min(len(s), i+8)], " ")
	}
	return fmt.Sprintf("token %d of %d (page) / %d (Markdown)\n page:     … %s …\n markdown: … %s …", i, len(want), len(got), around(want), around(got))
}

func TestGoldenFidelity(t *testing.T) {
	for _, g := range goldenPages(t) {
		t.Run(g.golden, func(t *testing.T) {
			want, got := articleReading(t, g.page), renderedReading(t, readGolden(t, g.golden))
			t.Logf("fidelity %s: %d tokens", g.golden, len(want))
			if d := firstDifference(want, got); d != "" {
				t.Errorf("the rendered Markdown does not read as the article: %s", d)
			}
		})
	}
}

// No line of a golden file ends in white space outside code blocks and raw HTML blocks, as
// goldmark parses them (class 3): a trailing space or U+00A0 is either a hard break written the
// invisible way, or noise.
func TestGoldenLineEnds(t *testing.T) {
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM))
	for _, g := range goldenPages(t) {
		src := []byte(readGolden(t, g.golden))
		// Byte ranges of the lines that belong to code or HTML blocks.
		verbatim := map[int]bool{}
		doc := gm.Parser().Parse(text.NewReader(src))
		_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if !entering {
				return ast.WalkContinue, nil
			}
			switch n.Kind() {
			case ast.KindFencedCodeBlock, ast.KindCodeBlock, ast.KindHTMLBlock:
				lines := n.Lines()
				for i := 0; i < lines.Len(); i++ {
					verbatim[bytes.Count(src[:lines.At(i).Start], []byte("\n"))] = true
				}
			}
			return ast.WalkContinue, nil
		})
		for i, line := range strings.Split(string(src), "\n") {
			if !verbatim[i] && strings.TrimRight(line, " \t\u00a0") != line {
				t.Errorf("%s:%d ends in white space: %q", g.golden, i+1, line)
			}
		}
	}
}

// The synthetic page holds every construct of issue 13; rendered by goldmark, its Markdown must
// read as the article does: each class, as HTML a reader's renderer would produce.
func TestSyntheticRendersAsWritten(t *testing.T) {
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	var buf bytes.Buffer
	if err := gm.Convert([]byte(readGolden(t, "synthetic-2025-every-class.md")), &buf); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		// 1: captions are visible text.
		"<p><em>Схема сцены: слева исходные фотографии, справа восстановленная геометрия</em></p>",
		"<p><em>Рис. 2. Произвольные* фотографии: двух хватает</em></p>",
		// 2: quoted paragraphs stay paragraphs.
		"<blockquote>\n<p>* Возникает вопрос", "<p>1984. Год, когда всё началось.</p>",
		"<p># Это не заголовок", "<p>&gt; И это не вложенная цитата.</p>", "<p>- И не список.</p>",
		"<p>+ вложенная цитата с плюсом</p>", "<blockquote>\n<p>* сноска в спойлере</p>",
		// 3: a hard break inside a quote.
		"<p>Первая строка цитаты<br>\nвторая строка цитаты</p>",
		// 4: adjacent emphasis as written.
		"<em><strong>Внимание:</strong></em> <em>этот хвост курсивом, но не жирный.</em>",
		"<em>курсив</em><strong>жирный</strong>",
		// 5: the list's start.
		`<ol start="3">`,
		// 6: code in a quote and in a list in a quote.
		"<pre><code class=\"language-bash\">sudo apt-get update\nsudo apt-get install -y postgresql-15\n</code></pre>",
		"<pre><code class=\"language-go\">x := 1\ny := x + 1\n</code></pre>",
		// 7: the poll.
		"<p><strong>Какие конструкции вы используете чаще всего?</strong></p>",
		`<li><input disabled="" type="checkbox"> Таблицы с объединёнными ячейками — 25 (62.5%)</li>`,
		"<p>Проголосовали 40 пользователей. Воздержались 3 пользователя.</p>",
		// 8: merged cells, pipes in code in a cell, a table drawn in text.
		`<tr><td colspan="2"><p><strong>Тариф</strong></p></td><td><p>Цена</p></td></tr>`,
		`<tr><td rowspan="2"><p>Облако</p></td>`,
		"<td><code>a || b</code> или <code>x|y</code></td>",
		"<p>Таблица, нарисованная текстом:<br>\n| Язык | Год |<br>",
		// 9: prices are text, the formula is TeX.
		"<p>Тариф стоит $5 в месяц, а годовой $50; формула $E = mc^2$ — не цена.</p>",
		// 10: the table of contents works inside the Markdown.
		`<a href="#figures">Рисунки</a>`, `<h2><a id="figures"></a>Рисунки</h2>`,
		`<a href="#quotes">Цитаты</a>`, `<h2><a id="quotes"></a>Цитаты</h2>`,
		// 11: URLs as written, without tracking.
		`href="https://public.tableau.com/views/CVPR2021/Dashboard1?:language=en-US&amp;:display_count=n&amp;:origin=viz_share_link"`,
		`href="https://www.google.com/search?q=habr+markdown"`,
		// 12: inline HTML.
		"E = mc<sup>2</sup>, вода H<sub>2</sub>O, копирование <kbd>Ctrl</kbd>+<kbd>C</kbd>, <mark>важная мысль</mark> и " +
			`<abbr title="HyperText Markup Language">HTML</abbr>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered Markdown lacks %q", want)
		}
	}
	for _, wrong := range []string{"<li>Возникает", "<h1>", "<th>Язык</th>", "%3Alanguage", "utm_", "<li>И не список"} {
		if strings.Contains(got, wrong) {
			t.Errorf("rendered Markdown has %q", wrong)
		}
	}
}

// The issue-25 page holds the five classes of issue 25; rendered by goldmark, its Markdown must
// read as the article does, and its links open what the page's players and cells point at.
func TestIssue25RendersAsWritten(t *testing.T) {
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	var buf bytes.Buffer
	if err := gm.Convert([]byte(readGolden(t, "synthetic-2025-issue25.md")), &buf); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		// 1: the poll once, as a task list, its amounts as written.
		`<li><input disabled="" type="checkbox"> до $50 — 12 (25%)</li>`,
		`<li><input disabled="" type="checkbox"> больше $200 | по счёту — 12 (25%)</li>`,
		"<p>Проголосовали 48 пользователей. Воздержались 5 пользователей.</p>",
		// 2: the players' parameters.
		`href="https://www.youtube.com/watch?v=dQw4w9WgXcQ&amp;t=90"`, `href="https://www.youtube.com/watch?v=aqz-KE-bpKQ&amp;t=42"`,
		`href="https://player.vimeo.com/video/76979871?h=8272103f6e#t=1m2s"`,
		`href="https://codepen.io/team/codepen/embed/PNaGbb?default-tab=html%2Cresult&amp;theme-id=dark"`,
		// 3: a pipe in a URL and a title in a cell.
		`<td><a href="https://wiki.example/search?q=a%7Cb">wiki</a></td>`,
		`<td><a href="https://grafana.example/d/abc?var-host=web1%7Cweb2&amp;from=now-1h" title="web1|web2">панель</a></td>`,
		// 4: entity text stays text.
		"<code>&amp;mdash;</code> или прямо в тексте: &amp;mdash;. Неразрывный пробел записывают как &amp;nbsp;, стрелку как &amp;#8594; или &amp;rarr;, а AT&amp;T, &amp;foo; и &lt;b&gt;",
		// 5: one code span per line.
		"<code>pip install requests</code><br>\n<code>pip install pandas</code>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered Markdown lacks %q", want)
		}
	}
	for _, wrong := range []string{"5012", "—.", "→", "requests pip", "<td>b"} {
		if strings.Contains(got, wrong) {
			t.Errorf("rendered Markdown has %q", wrong)
		}
	}
}
