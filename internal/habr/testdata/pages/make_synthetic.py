# make_synthetic.py builds synthetic-2025-every-class.html from the real 2025 page of article
# 769102: the page shell is kept byte for byte, the article's own parts are replaced (see
# README.md). Run from this directory:
#
#   python3 make_synthetic.py ../../../fakes/fixtures/habr/html/habr-com-ru-articles-769102-spa-2025-v2.263.html synthetic-2025-every-class.html
import re, sys
src = open(sys.argv[1], encoding='utf-8').read()

ID = '900001'
PATH = '/ru/companies/habr/articles/900001/'
TITLE = 'Синтетическая статья: каждая конструкция редактора'
LOGIN = 'synthetic_author'
NAME = 'Иван Петров'

body = '''
<p>Эта статья собрана из настоящей разметки редактора v2 (тела публикаций из API Хабра), чтобы в одной странице были все конструкции, которые ломали Markdown.</p>
<h3>Оглавление</h3>
<ol><li><p><a href="#figures" rel="noopener noreferrer nofollow">Рисунки</a></p></li><li><p><a href="https://habr.com/ru/companies/habr/articles/900001/#quotes" rel="noopener noreferrer nofollow">Цитаты</a></p></li><li><p><a href="#tables" rel="noopener noreferrer nofollow">Таблицы</a></p></li><li><p><a href="#discussion" rel="noopener noreferrer nofollow">Обсуждение</a></p></li></ol>
<a class="anchor" name="figures" id="figures"></a><h2>Рисунки</h2>
<figure class="full-width "><img src="https://habrastorage.org/r/w1560/getpro/habr/upload_files/8dc/ee4/ffe/8dcee4ffe24477d4b87dfd1b33906a17.jpg" alt="Схема сцены: слева исходные фотографии, справа восстановленная геометрия" title="Схема сцены: слева исходные фотографии, справа восстановленная геометрия" width="780" height="440" srcset="https://habrastorage.org/r/w780/getpro/habr/upload_files/8dc/ee4/ffe/8dcee4ffe24477d4b87dfd1b33906a17.jpg 780w,&#10;       https://habrastorage.org/r/w1560/getpro/habr/upload_files/8dc/ee4/ffe/8dcee4ffe24477d4b87dfd1b33906a17.jpg 781w" loading="lazy" decode="async"><figcaption>Схема сцены: слева исходные фотографии, справа восстановленная геометрия</figcaption></figure>
<figure class=""><img src="https://habrastorage.org/getpro/habr/upload_files/709/c9c/44c/709c9c44cba3df65dfe17551a9c32ba9.png" alt="image" width="780" height="440"><figcaption>Рис. 2. Произвольные* фотографии: <em>двух</em> хватает</figcaption></figure>
<figure class=""><img src="https://habrastorage.org/getpro/habr/upload_files/d64/b8c/37d/d64b8c37d7a903e63fdb0f0edfef9359.png" width="780" height="440"><figcaption></figcaption></figure>
<a class="anchor" name="quotes" id="quotes"></a><h2>Цитаты</h2>
<blockquote><p>* Возникает вопрос, почему бы не обобщить метод для multi-view?</p><p>1984. Год, когда всё началось.</p><p># Это не заголовок, а решётка в начале абзаца.</p><p>&gt; И это не вложенная цитата.</p><p>- И не список.</p></blockquote>
<p>Абзац, который кончается неразрывным пробелом.&nbsp;</p>
<blockquote><p>Первая строка цитаты<br>вторая строка цитаты&nbsp;</p><p>Второй абзац цитаты.</p><blockquote><p>+ вложенная цитата с плюсом</p></blockquote></blockquote>
<p><strong><em>Внимание:</em></strong><em> этот хвост курсивом, но не жирный.</em> А здесь <em>курсив</em><strong>жирный</strong> подряд.</p>
<p>Шаги продолжают предыдущий список:</p>
<ol start="3"><li><p>Третий шаг.</p></li><li><p>Четвёртый шаг.</p></li></ol>
<blockquote><p>Команда в цитате:</p><pre><code class="bash">sudo apt-get update
sudo apt-get install -y postgresql-15</code></pre><ul><li><p>и в списке в цитате:</p><pre><code class="go">x := 1
y := x + 1</code></pre></li></ul></blockquote>
<a class="anchor" name="tables" id="tables"></a><h2>Таблицы</h2>
<div class="table"><table><tbody><tr><td colspan="2" data-colwidth="396" width="396"><p align="center"><strong>Тариф</strong></p></td><td><p>Цена</p></td></tr><tr><td rowspan="2"><p>Облако</p></td><td><p>Месяц</p></td><td><p>$5 в месяц</p></td></tr><tr><td><p>Год</p></td><td><p>$50 в год</p></td></tr></tbody></table></div>
<div class="table"><table><tbody><tr><td><p>Оператор</p></td><td><p>Пример</p></td></tr><tr><td><p>ИЛИ</p></td><td><p><code>a || b</code> или <code>x|y</code></p></td></tr></tbody></table></div>
<p>Таблица, нарисованная текстом:<br>| Язык | Год |<br>|------|-----|<br>| Go | 2009 |</p>
<p>Тариф стоит $5 в месяц, а годовой $50; формула <img class="formula inline" source="E = mc^2" alt="E = mc^2" src="https://habrastorage.org/getpro/habr/formulas/a.svg"> — не цена.</p>
<p>Ссылки: <a href="https://public.tableau.com/views/CVPR2021/Dashboard1?:language=en-US&amp;:display_count=n&amp;:origin=viz_share_link"><u>дашборд</u></a>, <a href="https://www.google.com/search?q=habr+markdown&amp;utm_source=habr&amp;utm_medium=article"><u>поиск</u></a>, <a href="https://ru.wikipedia.org/wiki/Неявная_функция"><u>неявная функция</u></a>, <a href="/ru/hubs/go/"><u>хаб Go</u></a>.</p>
<p>Формула E = mc<sup>2</sup>, вода H<sub>2</sub>O, копирование <kbd>Ctrl</kbd>+<kbd>C</kbd>, <mark>важная мысль</mark> и <abbr title="HyperText Markup Language">HTML</abbr>.</p>
<details class="spoiler"><summary>Спойлер с кодом</summary><div class="spoiler__content"><blockquote><p>* сноска в спойлере</p></blockquote><pre><code class="json">{
    "price": "$5",
    "pipe": "a|b"
}</code></pre></div></details>
<div class="tm-iframe_temp" data-src="https://embedd.srv.habr.com/iframe/6114f32a8ff4968fafa2a919" data-style="" id="6114f32a8ff4968fafa2a919" width=""></div>
<a class="anchor" name="discussion" id="discussion"></a><h2>Обсуждение</h2>
<p>Ссылка на <a href="#comment_123">комментарий</a> под статьёй остаётся ссылкой на Хабр: в тексте статьи такого якоря нет.</p>
'''

poll = '''<div class="tm-article-poll"><div class="tm-article-poll__header">Какие конструкции вы используете чаще всего?</div> <div class="tm-article-poll__answers"><div class="tm-article-poll__answer"><div class="tm-article-poll__answer-data"><span class="tm-article-poll__answer-percent tm-article-poll__answer-percent_winning">
            62.5%
          </span> <span class="tm-article-poll__answer-label"><span>Таблицы с объединёнными ячейками</span></span> <span class="tm-article-poll__answer-votes">
            25
          </span></div> <div class="tm-article-poll__answer-bar"><div class="tm-article-poll__answer-progress tm-article-poll__answer-progress_winning" style="width:62.5%;"></div></div></div><div class="tm-article-poll__answer"><div class="tm-article-poll__answer-data"><span class="tm-article-poll__answer-percent">
            37.5%
          </span> <span class="tm-article-poll__answer-label"><span>Код в цитатах</span></span> <span class="tm-article-poll__answer-votes">
            15
          </span></div> <div class="tm-article-poll__answer-bar"><div class="tm-article-poll__answer-progress" style="width:37.5%;"></div></div></div></div> <div class="tm-article-poll__stats"><span>Проголосовали 40 пользователей.</span> <span>Воздержались 3 пользователя.</span></div></div>'''

out = src
# The SPA state holds article 769102 and other authors: a synthetic page has none.
out = re.sub(r'<script>window\.__PINIA_STATE__=.*?</script>', '', out, flags=re.S)
# Head.
out = out.replace('<title>Распределённые транзакции / Хабр</title>', '<title>%s / Хабр</title>' % TITLE)
out = out.replace('https://habr.com/ru/articles/769102/', 'https://habr.com' + PATH)
out = out.replace('content="Распределённые транзакции"', 'content="%s"' % TITLE)
out = out.replace('"headline":"Распределённые транзакции"', '"headline":"%s"' % TITLE)
out = out.replace('content="769102"', 'content="%s"' % ID)
out = out.replace('2023-10-22T11:31:04.000Z', '2025-09-30T09:15:00.000Z')
out = out.replace('title="2023-10-22, 11:31">22 окт 2023 в 11:31', 'title="2025-09-30, 12:15">30 сен 2025 в 12:15')
out = out.replace('/ru/articles/769102/', PATH).replace('https:\\/\\/habr.com\\/ru\\/articles\\/769102\\/', 'https:\\/\\/habr.com' + PATH.replace('/', '\\/'))
out = out.replace('/post/769102/', '/post/' + ID + '/').replace('/publications/769102/', '/publications/' + ID + '/').replace('/publication/769102/', '/publication/' + ID + '/').replace('publication\\/769102', 'publication\\/' + ID)
out = out.replace('panyukovnikolay', LOGIN)
# Title.
out = out.replace('<h1 class="tm-title tm-title_h1" lang="ru" data-test-id="articleTitle"><span>Распределённые транзакции</span></h1>',
                  '<h1 class="tm-title tm-title_h1" lang="ru" data-test-id="articleTitle"><span>%s</span></h1>' % TITLE)
# Hubs: the company blog first, as Habr lists it.
out = out.replace('<span class="tm-publication-hub__link-container"><a href="/ru/hubs/java/" class="tm-publication-hub__link">',
                  '<span class="tm-publication-hub__link-container"><a href="/ru/companies/habr/articles/" class="tm-publication-hub__link"><!--[--><span>Блог компании Хабр</span><!--]--></a></span>'
                  '<span class="tm-publication-hub__link-container"><a href="/ru/hubs/java/" class="tm-publication-hub__link">', 1)
# The translation's origin.
out = out.replace('<a class="tm-article-presenter__origin-link" href="https://developers.redhat.com/articles/2021/09/21/distributed-transaction-patterns-microservices-compared" target="_blank">Автор оригинала: <span>Bilgin Ibryam</span></a>',
                  '<a class="tm-article-presenter__origin-link" href="https://example.org/blog/every-construct?ref=habr" target="_blank">Автор оригинала: <span>Jane Q. Writer</span></a>')
# Body.
start = out.index('<div xmlns="http://www.w3.org/1999/xhtml">')
end = out.index('</div>', out.index('<p></p>', start))
out = out[:start] + '<div xmlns="http://www.w3.org/1999/xhtml">' + body + out[end:]
# The poll, inside the article after its meta block (tags and hubs), as on m.habr.com.
i = out.index('</article>')
out = out[:i] + poll + out[i:]
# The author card names the author.
out = out.replace('<!---->\n                                                                                <a href="/ru/users/%s/" class="tm-user-card__nickname' % LOGIN,
                  '<span class="tm-user-card__name tm-user-card__name_variant-article">%s</span>\n                                                                                <a href="/ru/users/%s/" class="tm-user-card__nickname' % (NAME, LOGIN))
assert NAME in out and 'Распределённые транзакции' not in out.split('<article')[1].split('</article>')[0], 'replacement failed'
open(sys.argv[2], 'w', encoding='utf-8').write(out)
