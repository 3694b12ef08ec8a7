package habr

import (
	"testing"
)

// inPage wraps body HTML in a minimal editor-v2 article page.
func inPage(body string) []byte {
	return []byte(`<!DOCTYPE html><html lang="ru"><head><meta charset="utf-8"><title>t</title></head><body>` +
		`<div class="tm-article-presenter__header"><a class="tm-user-info__username" href="/ru/users/someone/">someone</a></div>` +
		`<div class="article-body"><div id="post-content-body"><div><div class="article-formatted-body article-formatted-body_version-2">` +
		`<div xmlns="http://www.w3.org/1999/xhtml">` + body + `</div></div></div></div></div>` +
		`<div class="tm-article-presenter__meta"><a class="tm-tags-list__link" href="/ru/search/?q=%5Bgo%5D">go</a></div>` +
		`<script>window.stats = 1</script></body></html>`)
}

func TestMarkdownFeatures(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{
			name: "headings, paragraphs, emphasis, strikethrough",
			body: `<h2>Раздел</h2><p>Текст с <b>жирным</b>, <i>курсивом</i>, <strong>strong</strong> и <s>зачёркнутым</s>.</p><h3>Подраздел</h3><p>Второй абзац</p>`,
			want: "## Раздел\n\nТекст с **жирным**, *курсивом*, **strong** и ~~зачёркнутым~~.\n\n### Подраздел\n\nВторой абзац\n",
		},
		{
			name: "legacy text separated by br",
			body: `Первая строка<br/>вторая строка<br/><br/>Новый абзац<br/>`,
			want: "Первая строка\\\nвторая строка\n\nНовый абзац\n",
		},
		{
			name: "class 3: no line ends in white space outside code; hard breaks are backslashes where they break",
			body: `<p>конец абзаца&nbsp;</p><p>строка&nbsp;<br>следующая<br></p><ul><li>пункт<br></li><li>второй&nbsp;&nbsp;</li></ul>` +
				`<blockquote><p>цитата<br>вторая строка&nbsp;</p></blockquote><h2>Заголовок&nbsp;</h2>` +
				`<pre><code>code with trailing spaces   
  </code></pre><blockquote><pre><code>a

b</code></pre></blockquote>`,
			want: "конец абзаца\n\nстрока\\\nследующая\n\n- пункт\n- второй\n\n> цитата\\\n> вторая строка\n\n## Заголовок\n\n" +
				"```\ncode with trailing spaces   \n  \n```\n\n> ```\n> a\n>\n> b\n> ```\n",
		},
		{
			name: "nested lists",
			body: `<ul><li><p>один</p></li><li><p>два</p><ol><li><p>два.один</p></li><li><p>два.два</p></li></ol></li></ul>`,
			want: "- один\n- два\n\n  1. два.один\n  2. два.два\n",
		},
		{
			name: "blockquote",
			body: `<blockquote><p>Цитата</p><p>вторая часть</p></blockquote><p>после</p>`,
			want: "> Цитата\n>\n> вторая часть\n\nпосле\n",
		},
		{
			name: "class 2: quoted paragraphs that look like lists, headings or quotes are escaped at every depth",
			body: `<blockquote><p>* note</p><p>- dash</p><p>+ plus</p><p>1. one</p><p>1984. year</p><p># not heading</p><p>&gt; not nested</p>` +
				`<blockquote><p>* deeper</p></blockquote></blockquote>` +
				`<ul><li><blockquote><p>1. in a list</p></blockquote></li></ul>` +
				`<details class="spoiler"><summary>s</summary><div class="spoiler__content"><blockquote><p># in a spoiler</p></blockquote></div></details>`,
			want: "> \\* note\n>\n> \\- dash\n>\n> \\+ plus\n>\n> 1\\. one\n>\n> 1984\\. year\n>\n> \\# not heading\n>\n> &gt; not nested\n>\n> > \\* deeper\n\n" +
				"- > 1\\. in a list\n\n<details>\n<summary>s</summary>\n\n> \\# in a spoiler\n\n</details>\n",
		},
		{
			name: "class 6: code in a blockquote, in a list in a blockquote, in a blockquote in a list keeps its prefixes",
			body: `<blockquote><pre><code class="go">a := 1
b := 2</code></pre><ul><li><pre><code>x
y</code></pre></li></ul></blockquote><ol><li><blockquote><pre><code>p
q</code></pre></blockquote></li></ol>`,
			want: "> ```go\n> a := 1\n> b := 2\n> ```\n>\n> - ```\n>   x\n>   y\n>   ```\n\n1. > ```\n   > p\n   > q\n   > ```\n",
		},
		{
			name: "class 4: adjacent emphasis runs render as written",
			body: `<p><strong><em>X</em></strong><em> tail</em>, <b>a</b><i>b</i>, <em>c</em><strong>d</strong>, <em>e</em><em>f</em>, <strong>g</strong><span><em>h</em></span></p>`,
			want: "***X*** *tail*, **a***b*, *c***d**, *ef*, **g***h*\n",
		},
		{
			name: "class 5: an ordered list keeps its start",
			body: `<ol start="3"><li><p>три</p></li><li><p>четыре</p></li></ol><ol start="0"><li>ноль</li></ol><ol start="x"><li>один</li></ol>`,
			want: "3. три\n4. четыре\n\n<!-- -->\n\n0. ноль\n\n<!-- -->\n\n1. один\n",
		},
		{
			name: "class 9 and literal delimiters: dollars, pipes, tildes and a star that could close emphasis are escaped",
			body: `<p>$5 в месяц, а годовой $50; a|b; ~5 и ~10; a * b</p><p><em>двух* изображений</em></p>`,
			want: "\\$5 в месяц, а годовой \\$50; a\\|b; \\~5 и \\~10; a * b\n\n*двух\\* изображений*\n",
		},
		{
			name: "relative and odd links",
			body: `<p><a href="/ru/users/x/">автор</a>, <a href="#sec">раздел</a>, <a href="javascript:alert(1)">скрипт</a>, <a href="https://go.dev/">Go</a></p>`,
			want: "[автор](https://habr.com/ru/users/x/), [раздел](https://habr.com/ru/articles/1/#sec), скрипт, [Go](https://go.dev/)\n",
		},
		{
			name: "class 10: in-article links point at anchors the Markdown keeps",
			body: `<h3>Оглавление</h3><ol><li><p><a href="#Class">Класс</a></p></li><li><p><a href="https://habr.com/ru/post/1/#Field">Поля</a></p></li>` +
				`<li><p><a href="#h-methods">Методы</a></p></li><li><p><a href="#missing">Нет такого</a></p></li><li><p><a href="/ru/post/2/#Class">Другая статья</a></p></li></ol>` +
				`<a class="anchor" name="Class" id="Class"></a><h2>Класс</h2><p>Текст<a name="habracut"></a></p><a name="Field"></a><p>Поля</p>` +
				`<h2 id="h-methods">Методы</h2><p><a name="fn1">¹</a> сноска</p>`,
			want: "### Оглавление\n\n1. [Класс](#Class)\n2. [Поля](#Field)\n3. [Методы](#h-methods)\n4. [Нет такого](https://habr.com/ru/articles/1/#missing)\n" +
				"5. [Другая статья](https://habr.com/ru/post/2/#Class)\n\n## <a id=\"Class\"></a>Класс\n\nТекст\n\n<a id=\"Field\"></a>Поля\n\n" +
				"## <a id=\"h-methods\"></a>Методы\n\n<a id=\"fn1\"></a>¹ сноска\n",
		},
		{
			name: "class 11: link URLs as the author wrote them, without utm_* parameters",
			body: `<p><a href="https://public.tableau.com/views/CVPR2021/Dashboard1?:language=en-US&amp;:display_count=n">карта</a>, ` +
				`<a href="https://example.com/search?q=a+b&amp;utm_source=habr&amp;utm_medium=referral&amp;page=2#top">поиск</a>, ` +
				`<a href="https://ru.wikipedia.org/wiki/Неявная_функция">вики</a>, <a href="https://adapty.io/?utm_source=habr.com">adapty</a>, ` +
				`<a href="//example.com/x y">пробел</a>, <a href="https://en.wikipedia.org/wiki/Go_(programming_language)" title="Go &quot;lang&quot;">Go</a>, ` +
				`<a href="mailto:a@example.com?subject=Hi+there">почта</a></p>`,
			want: "[карта](https://public.tableau.com/views/CVPR2021/Dashboard1?:language=en-US&:display_count=n), " +
				"[поиск](https://example.com/search?q=a+b&page=2#top), [вики](https://ru.wikipedia.org/wiki/Неявная_функция), " +
				"[adapty](https://adapty.io/), [пробел](<https://example.com/x y>), " +
				"[Go](https://en.wikipedia.org/wiki/Go_(programming_language) 'Go \"lang\"'), [почта](mailto:a@example.com?subject=Hi+there)\n",
		},
		{
			name: "lazy image: data-src over the blurred placeholder",
			body: `<p><img src="https://habrastorage.org/r/w780q1/webt/sk/la/0r/skla0rb4ggcljeuxyqmgvmmxfp4.jpeg" alt="image" data-src="https://habrastorage.org/webt/sk/la/0r/skla0rb4ggcljeuxyqmgvmmxfp4.jpeg" data-blurred="true"/></p>`,
			want: "![image](https://habrastorage.org/webt/sk/la/0r/skla0rb4ggcljeuxyqmgvmmxfp4.jpeg)\n",
		},
		{
			name: "mobile placeholder src",
			body: `<img src="/img/px.gif" data-src="https://habrastorage.org/webt/8_/cb/vq/8_cbvq8dprb4-dhysq6u0u1aw_8.png"/>`,
			want: "![](https://habrastorage.org/webt/8_/cb/vq/8_cbvq8dprb4-dhysq6u0u1aw_8.png)\n",
		},
		{
			name: "2025 resized src and srcset",
			body: `<figure class="full-width "><img src="https://habrastorage.org/r/w1560/getpro/habr/upload_files/28f/eab/4e1/28f.png" srcset="https://habrastorage.org/r/w780/getpro/habr/upload_files/28f/eab/4e1/28f.png 780w" loading="lazy"/></figure>`,
			want: "![](https://habrastorage.org/getpro/habr/upload_files/28f/eab/4e1/28f.png)\n",
		},
		{
			name: "browser-saved copies: webt name mapped back, other copies dropped",
			body: `<p><img src="page_files/gr_3kn9i3dfajdbkguvqssgah6w.png"/></p><p><img src="page_files/a2ebb081c4eb8a00beaf5fa5a599c145.jpg" alt="avatar"/>текст</p>`,
			want: "![](https://habrastorage.org/webt/gr/_3/kn/gr_3kn9i3dfajdbkguvqssgah6w.png)\n\nтекст\n",
		},
		{
			name: "relative image, title that repeats alt",
			body: `<p><img src="/img/logo.png" alt=" Логотип  Хабра " title="Логотип Хабра"/></p>`,
			want: "![Логотип Хабра](https://habr.com/img/logo.png)\n",
		},
		{
			name: "figure caption always kept; an alt that repeats it is dropped",
			body: `<figure class="full-width "><img src="https://habrastorage.org/a.png" alt="Схема"><figcaption>Рис. 1. <a href="/ru/post/2/">Схема</a> из статьи</figcaption></figure>` +
				`<figure><img src="https://habrastorage.org/b.png" alt="Схема два"><figcaption> Схема  два</figcaption></figure>` +
				`<figure><img src="https://habrastorage.org/c.png" alt="c"><figcaption></figcaption></figure>`,
			want: "![Схема](https://habrastorage.org/a.png)\n\n*Рис. 1. [Схема](https://habr.com/ru/post/2/) из статьи*\n\n" +
				"![](https://habrastorage.org/b.png)\n\n*Схема два*\n\n![c](https://habrastorage.org/c.png)\n",
		},
		{
			name: "code blocks with Habr language classes, inline code",
			body: `<pre><code class="bash hljs">sudo yum install <span class="hljs-string">"certbot"</span> -y</code></pre>` +
				`<pre><code class="cpp">int main() {}</code></pre><pre><code>plain
  indented</code></pre><pre><code class="hljs">highlighted, no language</code></pre><p>Вызовите <code>go test</code>.</p>`,
			want: "```bash\nsudo yum install \"certbot\" -y\n```\n\n```cpp\nint main() {}\n```\n\n```\nplain\n  indented\n```\n\n" +
				"```\nhighlighted, no language\n```\n\nВызовите `go test`.\n",
		},
		{
			name: "HTML typed into a code block stays code, a script's and a form's tags and text included",
			body: `<pre><code class="html">&lt;p&gt;Hi&lt;/p&gt;
<script src="a.js"></script><script>if (a < b && c > d) { alert("x &amp; y") }</script>
<style>p > a { color: red }</style>
<form action="/q"><input name="q" value='say "hi"'><button>Go &amp; find</button></form>
<script src="https://gist.github.com/someone/1.js"></script></code></pre><p>после</p>`,
			want: "```html\n<p>Hi</p>\n<script src=\"a.js\"></script><script>if (a < b && c > d) { alert(\"x &amp; y\") }</script>\n" +
				"<style>p > a { color: red }</style>\n<form action=\"/q\"><input name=\"q\" value='say \"hi\"'><button>Go & find</button></form>\n" +
				"<script src=\"https://gist.github.com/someone/1.js\"></script>\n```\n\nпосле\n",
		},
		{
			name: "simple table becomes GFM with the first row as header",
			body: `<div class="table"><table><tbody><tr><td data-colwidth="396" width="396"><p>Язык</p></td><td><p>Год</p></td></tr>` +
				`<tr><td><p>Go</p></td><td><p>2009</p></td></tr></tbody></table></div>`,
			want: "| Язык | Год |\n|---|---|\n| Go | 2009 |\n",
		},
		{
			name: "table with blocks in a cell stays HTML, one row per line",
			body: `<table><tbody><tr><td data-colwidth="396"><p>Было</p></td><td><p>Стало</p></td></tr>` +
				`<tr><td><p>раз</p><p>два</p></td><td rowspan="2"><p><a href="/ru/hubs/go/">хаб</a></p></td></tr></tbody></table>`,
			want: "<table>\n<tbody>\n<tr><td><p>Было</p></td><td><p>Стало</p></td></tr>\n" +
				`<tr><td><p>раз</p><p>два</p></td><td rowspan="2"><p><a href="https://habr.com/ru/hubs/go/">хаб</a></p></td></tr>` +
				"\n</tbody>\n</table>\n",
		},
		{
			name: "table with a line break in a cell stays HTML",
			body: `<table><tr><td>a<br>b</td><td>c</td></tr></table>`,
			want: "<table>\n<tbody>\n<tr><td>a<br/>b</td><td>c</td></tr>\n</tbody>\n</table>\n",
		},
		{
			name: "class 8: merged cells keep the table HTML; a pipe in code in a GFM cell is escaped",
			body: `<table><tbody><tr><td colspan="2"><p>Оба</p></td></tr><tr><td><p>a</p></td><td><p>b</p></td></tr></tbody></table>` +
				`<table><tr><td><p>Синтаксис</p></td><td><p>Пример</p></td></tr><tr><td><p>или</p></td><td><p><code>a|b</code> и a|b</p></td></tr></table>` +
				`<table><tr><td><pre><code>x

y</code></pre></td><td>z</td></tr></table>`,
			want: "<table>\n<tbody>\n<tr><td colspan=\"2\"><p>Оба</p></td></tr>\n<tr><td><p>a</p></td><td><p>b</p></td></tr>\n</tbody>\n</table>\n\n" +
				"| Синтаксис | Пример |\n|---|---|\n| или | `a\\|b` и a\\|b |\n\n" +
				"<table>\n<tbody>\n<tr><td><pre><code>x&#10;&#10;y</code></pre></td><td>z</td></tr>\n</tbody>\n</table>\n",
		},
		{
			name: "class 8: lines of text joined by br that look like a table stay text",
			body: `<p>Таблица:<br>| a | b |<br>|---|---|<br>| c | d |</p>`,
			want: "Таблица:\\\n\\| a \\| b \\|\\\n\\|---\\|---\\|\\\n\\| c \\| d \\|\n",
		},
		{
			name: "legacy spoiler",
			body: `<div class="spoiler"><b class="spoiler_title">Весь код</b><div class="spoiler_text"><pre><code class="python hljs">print(1)</code></pre></div></div>`,
			want: "<details>\n<summary>Весь код</summary>\n\n```python\nprint(1)\n```\n\n</details>\n",
		},
		{
			name: "legacy spoiler inside a legacy spoiler",
			body: `<div class="spoiler"><b class="spoiler_title">Снаружи</b><div class="spoiler_text">текст<br/>` +
				`<div class="spoiler"><b class="spoiler_title">Внутри</b><div class="spoiler_text">глубже</div></div></div></div>`,
			want: "<details>\n<summary>Снаружи</summary>\n\nтекст\n\n<details>\n<summary>Внутри</summary>\n\nглубже\n\n</details>\n\n</details>\n",
		},
		{
			name: "editor-v2 spoiler with a nested spoiler and markup in the title",
			body: `<details class="spoiler"><summary>Ответ <b>&lt;JSON&gt;</b></summary><div class="spoiler__content"><p>Снаружи</p>` +
				`<details class="spoiler"><summary>Внутри</summary><div class="spoiler__content"><p>Глубже</p></div></details></div></details>`,
			want: "<details>\n<summary>Ответ &lt;JSON&gt;</summary>\n\nСнаружи\n\n<details>\n<summary>Внутри</summary>\n\nГлубже\n\n</details>\n\n</details>\n",
		},
		{
			name: "div with class spoiler but no spoiler text is left alone",
			body: `<div class="spoiler"><p>просто текст</p></div>`,
			want: "просто текст\n",
		},
		{
			name: "editor-v2 formulas",
			body: `<p>Сложность <img class="formula inline" source="O(n \log n)" alt="O(n \log n)" src="https://habrastorage.org/getpro/habr/formulas/a.svg"/> в среднем.</p>` +
				`<p><img class="formula" source="\sum_{i=1}^{n} i = \frac{n(n+1)}{2}" src="https://habrastorage.org/getpro/habr/formulas/b.svg"/></p>`,
			want: "Сложность $O(n \\log n)$ в среднем.\n\n$$\n\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}\n$$\n",
		},
		{
			name: "editor-v1 formulas",
			body: `<p>Пусть <img src="https://habrastorage.org/getpro/habr/formulas/c.svg" alt="$a_1 * b$" data-tex="inline"/>.</p>` +
				`<p><math><img src="https://habrastorage.org/getpro/habr/formulas/d.svg" alt="$H(P) = 21$" data-tex="display"/></math></p>`,
			want: "Пусть $a_1 * b$.\n\n$$\nH(P) = 21\n$$\n",
		},
		{
			name: "embedded videos and other embeds become links",
			body: `<p>Смотрите:</p><iframe id="6115035b920526a288c7e1bc" src="https://embedd.srv.habr.com/iframe/6115035b920526a288c7e1bc" class="embed_video embed__content" allowfullscreen="true"></iframe>` +
				`<div class="tm-iframe_temp" data-src="https://embedd.srv.habr.com/iframe/62a1" data-style="" id="62a1" width=""></div>` +
				`<div class="oembed"><iframe src="//www.youtube.com/embed/dQw4w9WgXcQ?rel=0"></iframe></div>` +
				`<iframe src="https://player.vimeo.com/video/1"></iframe><iframe src="https://codepen.io/x/embed/y"></iframe><iframe></iframe>`,
			want: "Смотрите:\n\n[Video](https://embedd.srv.habr.com/iframe/6115035b920526a288c7e1bc)\n\n[Embedded content](https://embedd.srv.habr.com/iframe/62a1)\n\n" +
				"[Video](https://www.youtube.com/watch?v=dQw4w9WgXcQ)\n\n[Video](https://player.vimeo.com/video/1)\n\n[Embedded content](https://codepen.io/x/embed/y)\n",
		},
		{
			name: "issue 25 class 2: an embed's link opens what the reader saw, parameters included",
			body: `<div class="oembed"><iframe allowfullscreen src="https://www.youtube.com/embed/dQw4w9WgXcQ?start=90&amp;rel=0&amp;feature=oembed"></iframe></div>` +
				`<iframe src="https://www.youtube-nocookie.com/embed/aqz-KE-bpKQ?t=42&amp;list=PL590L5WQmH8fJ54F369BLDSqIwcs-TCfs"></iframe>` +
				`<iframe src="https://www.youtube.com/embed/videoseries?list=PL590L5WQmH8fJ54F369BLDSqIwcs-TCfs&amp;autoplay=1"></iframe>` +
				`<div class="tm-iframe_temp" data-src="https://player.vimeo.com/video/76979871?h=8272103f6e#t=1m2s" data-style="" id="1" width=""></div>` +
				`<iframe src="https://codepen.io/team/codepen/embed/PNaGbb?default-tab=html%2Cresult&amp;theme-id=dark"></iframe>` +
				`<iframe src="https://t.me/durov/43?embed=1&amp;userpic=true"></iframe>` +
				`<script async src="https://telegram.org/js/telegram-widget.js?22" data-telegram-post="durov/43" data-width="100%"></script>` +
				`<script src="https://gist.github.com/octocat/6cad326836d38bd3a7ae.js?file=hello_world.rb"></script><script>var x = 1</script>`,
			want: "[Video](https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=90)\n\n[Video](https://www.youtube.com/watch?v=aqz-KE-bpKQ&t=42&list=PL590L5WQmH8fJ54F369BLDSqIwcs-TCfs)\n\n" +
				"[Video](https://www.youtube.com/playlist?list=PL590L5WQmH8fJ54F369BLDSqIwcs-TCfs)\n\n[Video](https://player.vimeo.com/video/76979871?h=8272103f6e#t=1m2s)\n\n" +
				"[Embedded content](https://codepen.io/team/codepen/embed/PNaGbb?default-tab=html%2Cresult&theme-id=dark)\n\n" +
				"[Embedded content](https://t.me/durov/43?embed=1&userpic=true)\n\n[Embedded content](https://t.me/durov/43)\n\n" +
				"[Embedded content](https://gist.github.com/octocat/6cad326836d38bd3a7ae#file-hello_world-rb)\n",
		},
		{
			name: "issue 25 class 2: Flash-era players and videos become links too",
			body: `<object width="425" height="344"><param name="movie" value="http://www.youtube.com/v/dQw4w9WgXcQ&amp;hl=ru&amp;fs=1&amp;start=30"></param>` +
				`<embed src="http://www.youtube.com/v/dQw4w9WgXcQ&amp;hl=ru&amp;fs=1&amp;start=30" type="application/x-shockwave-flash" width="425" height="344"></embed></object>` +
				`<video controls><source src="/files/demo.mp4#t=5" type="video/mp4"></video>`,
			want: "[Video](https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=30)\n\n[Video](https://habr.com/files/demo.mp4#t=5)\n",
		},
		{
			name: "issue 25 class 3: pipes in a formula and an attribute in a GFM cell",
			body: `<table><tr><td><p>Норма</p></td></tr><tr><td><p><img class="formula inline" source="|x|"> и <abbr title="a|b">ab</abbr></p></td></tr></table>`,
			want: "| Норма |\n|---|\n| $\\|x\\|$ и <abbr title=\"a&#124;b\">ab</abbr> |\n",
		},
		{
			name: "page machinery inside the body is dropped",
			body: `<p>Текст<a name="habracut"></a></p><script>alert(1)</script><style>p{}</style><form><input name="q"><button>Голосовать</button></form><noscript>включите JS</noscript><p>конец</p>`,
			want: "Текст\n\nконец\n",
		},
		{
			name: "class 12: sup, sub, kbd, mark and abbr stay inline HTML around Markdown",
			body: `<p>E = mc<sup>2</sup>, H<sub>2</sub>O, x<sup><em>n</em>*</sup>, <kbd>Ctrl</kbd>+<kbd>C</kbd>, ` +
				`<mark>важно </mark>, <abbr title="HyperText  Markup Language">HTML</abbr>, <sup> </sup>конец</p>`,
			want: "E = mc<sup>2</sup>, H<sub>2</sub>O, x<sup>*n*\\*</sup>, <kbd>Ctrl</kbd>+<kbd>C</kbd>, " +
				"<mark>важно</mark> , <abbr title=\"HyperText Markup Language\">HTML</abbr>, конец\n",
		},
		{
			name: "issue 25 class 3: pipes in a link's URL, title and an image's alt in a GFM cell are escaped",
			body: `<table><tr><td><p>Ссылка</p></td><td><p>Картинка</p></td></tr><tr><td><p><a href="https://wiki.example/search?q=a|b" title="a|b">wiki</a></p></td>` +
				`<td><p><img src="https://habrastorage.org/a|b.png" alt="x|y"></p></td></tr></table><p><a href="https://wiki.example/search?q=a|b">вне таблицы</a></p>`,
			want: "| Ссылка | Картинка |\n|---|---|\n| [wiki](https://wiki.example/search?q=a\\|b \"a\\|b\") | ![x\\|y](https://habrastorage.org/a\\|b.png) |\n\n" +
				"[вне таблицы](https://wiki.example/search?q=a|b)\n",
		},
		{
			name: "issue 25 class 4: text that Markdown would read as a character reference stays text",
			body: `<p>Тире пишется &amp;mdash;, пробел &amp;nbsp;, код &amp;#8212; и &amp;#x2014;; а &amp;foo;, AT&amp;T, &amp;amp и &lt;b&gt; остаются. <code>&amp;mdash;</code></p>` +
				`<p><a href="https://example.com/?q=&amp;copy;&amp;x=1" title="&amp;lt;b&amp;gt;">ссылка &amp;hellip;</a> <img src="https://habrastorage.org/a.png" alt="&amp;pi;"></p>`,
			want: "Тире пишется &amp;mdash;, пробел &amp;nbsp;, код &amp;#8212; и &amp;#x2014;; а &foo;, AT&T, &amp и &lt;b&gt; остаются. `&mdash;`\n\n" +
				"[ссылка &amp;hellip;](https://example.com/?q=&amp;copy;&x=1 \"&amp;lt;b&amp;gt;\") ![&amp;pi;](https://habrastorage.org/a.png)\n",
		},
		{
			name: "issue 25 class 5: a line break inside inline code keeps the lines apart",
			body: `<p>Установите: <code>pip install requests<br>pip install pandas<br><br></code> и всё.</p><code>a<br>b</code>` +
				`<table><tr><td><p>Команды</p></td></tr><tr><td><p><code>x|y<br>z</code></p></td></tr></table>`,
			want: "Установите: `pip install requests`\\\n`pip install pandas`\\\n и всё.\n\n`a`\\\n`b`\n\n" +
				"<table>\n<tbody>\n<tr><td><p>Команды</p></td></tr>\n<tr><td><p><code>x|y<br/>z</code></p></td></tr>\n</tbody>\n</table>\n",
		},
		{
			name: "lines with only spaces are emptied, code keeps its spaces",
			body: `<ol><li><p>пункт</p><ol><li><p>вложенный</p></li></ol></li></ol><pre><code class="python">if x:
    
    pass</code></pre>`,
			want: "1. пункт\n\n   1. вложенный\n\n```python\nif x:\n    \n    pass\n```\n",
		},
	}
	e := NewExtractor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := e.Extract("https://habr.com/ru/articles/1/", inPage(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if a.Markdown != tt.want {
				t.Errorf("markdown:\n%s\nwant:\n%s\n(got %q)", a.Markdown, tt.want, a.Markdown)
			}
			// Rendered, it reads as the body does (see fidelity_test.go).
			if d := firstDifference(articleReading(t, inPage(tt.body)), renderedReading(t, a.Markdown)); d != "" {
				t.Errorf("the rendered Markdown does not read as the body: %s", d)
			}
		})
	}
}
