package habr

import (
	"bytes"
	"fmt"
	"sort"
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
// (CommonMark + GFM, raw HTML passed through, as our spoilers and complex tables need), then
// the rendered page's visible words. It compares them with the visible words of the article in
// the source page: its body container and its polls, as a browser shows them (captions,
// spoilers and table cells included; scripts, styles and form controls not). Every word of the
// article must be in the Markdown, as often as in the article.

// invisible are the elements whose text a reader never sees as text.
var invisible = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "head": true,
	"button": true, "select": true, "textarea": true, "input": true, "iframe": true,
}

// visibleWords counts the words of the text a browser shows for n.
func visibleWords(n *html.Node, words map[string]int) {
	switch {
	case n.Type == html.TextNode:
		for _, w := range strings.FieldsFunc(n.Data, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			words[w]++
		}
		return
	case n.Type == html.ElementNode && invisible[n.Data]:
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		visibleWords(c, words)
	}
}

// renderedWords renders Markdown with goldmark and counts its visible words.
func renderedWords(t testing.TB, md string) map[string]int {
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
	words := map[string]int{}
	visibleWords(doc, words)
	return words
}

// articleWords counts the visible words of the article in a source page: its body container
// and its polls, untouched by the extractor's cleanup.
func articleWords(t testing.TB, page []byte) map[string]int {
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
	words := map[string]int{}
	visibleWords(body.Nodes[0], words)
	for _, n := range doc.FindMatcher(pollBlocks).Nodes {
		visibleWords(n, words)
	}
	return words
}

// fidelity is the share of the article's words found in the Markdown, and the missing ones.
func fidelity(article, markdown map[string]int) (float64, []string) {
	total, found := 0, 0
	var missing []string
	for w, n := range article {
		total += n
		got := min(n, markdown[w])
		found += got
		if got < n {
			missing = append(missing, fmt.Sprintf("%s (%d of %d)", w, got, n))
		}
	}
	sort.Strings(missing)
	if total == 0 {
		return 1, nil
	}
	return float64(found) / float64(total), missing
}

func TestGoldenFidelity(t *testing.T) {
	for _, g := range goldenPages(t) {
		t.Run(g.golden, func(t *testing.T) {
			md := readGolden(t, g.golden)
			share, missing := fidelity(articleWords(t, g.page), renderedWords(t, md))
			t.Logf("fidelity %s: %.2f%% of %d words", g.golden, 100*share, sumWords(articleWords(t, g.page)))
			if share < 1 {
				t.Errorf("%.2f%% of the article's words are in the rendered Markdown; missing: %s",
					100*share, strings.Join(missing[:min(len(missing), 30)], ", "))
			}
		})
	}
}

func sumWords(w map[string]int) int {
	n := 0
	for _, c := range w {
		n += c
	}
	return n
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
