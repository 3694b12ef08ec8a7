# make_issue25.py builds the pages of issue 25 from the real 2025 page of article 769102, as
# make_synthetic.py does: the page shell is kept byte for byte, the article's own parts are
# replaced (see README.md). Run from this directory:
#
#   python3 make_issue25.py ../../../fakes/fixtures/habr/html/habr-com-ru-articles-769102-spa-2025-v2.263.html
import re, sys, urllib.parse
src = open(sys.argv[1], encoding='utf-8').read()

LOGIN = 'synthetic_author'

# The results view of a poll as the Vue site renders it inside #post-content-body since 2021:
# per answer its percentage, label and votes, side by side with no white space between them
# (the order is the one scrapers of the 2023 site read: child 1 the label, child 2 the votes).
def poll(question, answers, stats):
    out = '<div class="tm-article-poll"><div class="tm-article-poll__header">%s</div><div class="tm-article-poll__answers">' % question
    for percent, label, votes in answers:
        out += ('<div class="tm-article-poll__answer"><div class="tm-article-poll__answer-data">'
                '<span class="tm-article-poll__answer-percent">%s</span><span class="tm-article-poll__answer-label"><span>%s</span></span>'
                '<span class="tm-article-poll__answer-votes">%s</span></div><div class="tm-article-poll__answer-bar">'
                '<div class="tm-article-poll__answer-progress" style="width:%s;"></div></div></div>') % (percent, label, votes, percent)
    out += '</div><div class="tm-article-poll__stats">%s</div></div>' % ' '.join('<span>%s</span>' % s for s in stats)
    return out

# tm-iframe_temp is what the server renders for an embed (research §1.3); the script of the
# page turns it into an iframe with src = data-src.
def embed(src, id):
    return '<div class="tm-iframe_temp" data-src="%s" data-style="" id="%s" width=""></div>' % (src, id)

ISSUE25_BODY = '''
<p>Эта статья собрана из настоящей разметки Хабра для пяти конструкций, которые Markdown терял или менял.</p>
<h2>Встраивания</h2>
<p>С полутора минут в этом докладе начинается разбор планировщика:</p>
<div class="oembed"><iframe allowfullscreen id="5f3a9c2e8ff4968fafa2a901" src="https://www.youtube.com/embed/dQw4w9WgXcQ?start=90&amp;feature=oembed"></iframe></div>
<p>Короткий фрагмент, с 42-й секунды:</p>
<iframe id="5f3a9c2e8ff4968fafa2a902" src="https://www.youtube.com/embed/aqz-KE-bpKQ?t=42&amp;rel=0" class="embed_video embed__content" allowfullscreen="true"></iframe>
<p>Тот же момент на Vimeo, пример на CodePen, пост в Telegram и видео через прокси Хабра:</p>
''' + embed('https://player.vimeo.com/video/76979871?h=8272103f6e#t=1m2s', '5f3a9c2e8ff4968fafa2a903') + '\n' \
    + embed('https://codepen.io/team/codepen/embed/PNaGbb?default-tab=html%2Cresult&amp;theme-id=dark', '5f3a9c2e8ff4968fafa2a904') + '\n' \
    + embed('https://t.me/durov/43?embed=1', '5f3a9c2e8ff4968fafa2a905') + '\n' \
    + embed('https://embedd.srv.habr.com/iframe/66dd432bd1b5b66d8d1cb82b', '66dd432bd1b5b66d8d1cb82b') + '''
<h2>Таблицы</h2>
<div class="table"><table><tbody><tr><td data-colwidth="396" width="396"><p>Источник</p></td><td><p>Ссылка</p></td></tr><tr><td><p>Вики</p></td><td><p><a href="https://wiki.example/search?q=a|b">wiki</a></p></td></tr><tr><td><p>Мониторинг</p></td><td><p><a href="https://grafana.example/d/abc?var-host=web1|web2&amp;from=now-1h" title="web1|web2">панель</a></p></td></tr></tbody></table></div>
<h2>Разметка как текст</h2>
<p>Длинное тире в HTML пишут как <code>&amp;mdash;</code> или прямо в тексте: &amp;mdash;. Неразрывный пробел записывают как &amp;nbsp;, стрелку как &amp;#8594; или &amp;rarr;, а AT&amp;T, &amp;foo; и &lt;b&gt; остаются как есть.</p>
<h2>Код с переносами</h2>
Для начала работы, установим 3 библиотеки Python.<br>
<br>
<code>pip install beautifulsoup4</code><br>
<br>
Без цифры 4 вы ставите старый BS3, который работает только под Python(2.х).<br>
<br>
<code>pip install requests<br>
pip install pandas</code><br>
<br>
Теперь с помощью этих трех библиотек Python, можно проанализировать нашу веб-страницу.<br>
'''

ISSUE25_POLL = poll('Сколько вы готовы платить за облачный Postgres в месяц?',
                    [('25%', 'до $50', '12'), ('50%', 'от $50 до $200', '24'), ('25%', 'больше $200 | по счёту', '12')],
                    ['Проголосовали 48 пользователей.', 'Воздержались 5 пользователей.'])

NEWS_RU_BODY = '''
<p>Команда проекта выпустила новую версию СУБД. Главное изменение — подсистема асинхронного ввода-вывода, которая, по словам разработчиков, ускоряет последовательное чтение до трёх раз.</p>
<figure class="full-width "><img src="https://habrastorage.org/r/w1560/getpro/habr/upload_files/988/822/e36/988822e36c51909e438cf6dac29fc1bd.png" alt="Схема чтения с асинхронным вводом-выводом" title="Схема чтения с асинхронным вводом-выводом" width="780" height="440" srcset="https://habrastorage.org/r/w780/getpro/habr/upload_files/988/822/e36/988822e36c51909e438cf6dac29fc1bd.png 780w,&#10;       https://habrastorage.org/r/w1560/getpro/habr/upload_files/988/822/e36/988822e36c51909e438cf6dac29fc1bd.png 781w" loading="lazy" decode="async"><figcaption>Схема чтения с асинхронным вводом-выводом</figcaption></figure>
<p>Среди других изменений:</p>
<ul><li><p>виртуальные генерируемые столбцы по умолчанию;</p></li><li><p>функция <code>uuidv7()</code>;</p></li><li><p>пропуск ведущих столбцов B-tree индекса (skip scan).</p></li></ul>
<blockquote><p>Обновление с версии 17 не требует выгрузки данных: хватит <code>pg_upgrade</code>.</p></blockquote>
''' + embed('https://embedd.srv.habr.com/iframe/66dd434628dfc09d9e81d051', '66dd434628dfc09d9e81d051') + '''
<p>Источник: <a href="https://www.postgresql.org/about/news/?utm_source=habr&amp;utm_medium=news" rel="noopener noreferrer nofollow">postgresql.org</a>.</p>
'''

NEWS_EN_BODY = '''
<p>The project team has released a new version of the database. The headline change is an asynchronous I/O subsystem which, the developers say, makes sequential reads up to three times faster.</p>
<figure class="full-width "><img src="https://habrastorage.org/r/w1560/getpro/habr/upload_files/988/822/e36/988822e36c51909e438cf6dac29fc1bd.png" alt="Reading with asynchronous I/O" title="Reading with asynchronous I/O" width="780" height="440" loading="lazy" decode="async"><figcaption>Reading with asynchronous I/O</figcaption></figure>
<p>Other changes include:</p>
<ul><li><p>virtual generated columns by default;</p></li><li><p>a <code>uuidv7()</code> function;</p></li><li><p>skip scans over the leading columns of a B-tree index.</p></li></ul>
<blockquote><p>Upgrading from version 17 needs no dump: <code>pg_upgrade</code> is enough.</p></blockquote>
''' + embed('https://embedd.srv.habr.com/iframe/66dd434628dfc09d9e81d051', '66dd434628dfc09d9e81d051') + '''
<p>Source: <a href="https://www.postgresql.org/about/news/?utm_source=habr&amp;utm_medium=news" rel="noopener noreferrer nofollow">postgresql.org</a>.</p>
'''

TAG_ITEM = '<li class="tm-separated-list__item"><!--[--><a href="/%s/search/?target_type=posts&amp;order=relevance&amp;q=[%s]" class="tm-tags-list__link"><span>%s</span></a><!--]--></li>'
HUB_ITEM = ('<span class="tm-publication-hub__link-container"><a href="/%s/hubs/%s/" class="tm-publication-hub__link"><!--[--><span>%s</span>'
            '<span class="tm-article-snippet__profiled-hub" title="Профильный хаб"> * </span><!--]--></a></span>')


def build(out_file, id, path, title, time, body, poll_html='', lang='ru', hubs=None, tags=None):
    out = src
    # The SPA state holds article 769102 and other authors: a synthetic page has none.
    out = re.sub(r'<script>window\.__PINIA_STATE__=.*?</script>', '', out, flags=re.S)
    # Head.
    out = out.replace('<title>Распределённые транзакции / Хабр</title>', '<title>%s / Хабр</title>' % title)
    out = out.replace('https://habr.com/ru/articles/769102/', 'https://habr.com' + path)
    out = out.replace('content="Распределённые транзакции"', 'content="%s"' % title)
    out = out.replace('"headline":"Распределённые транзакции"', '"headline":"%s"' % title)
    out = out.replace('content="769102"', 'content="%s"' % id)
    iso, shown, local = time
    out = out.replace('2023-10-22T11:31:04.000Z', iso)
    out = out.replace('title="2023-10-22, 11:31">22 окт 2023 в 11:31', 'title="%s">%s' % (shown, local))
    out = out.replace('/ru/articles/769102/', path).replace('https:\\/\\/habr.com\\/ru\\/articles\\/769102\\/', 'https:\\/\\/habr.com' + path.replace('/', '\\/'))
    out = out.replace('/post/769102/', '/post/' + id + '/').replace('/publications/769102/', '/publications/' + id + '/').replace('/publication/769102/', '/publication/' + id + '/').replace('publication\\/769102', 'publication\\/' + id)
    out = out.replace('panyukovnikolay', LOGIN)
    # Title.
    out = out.replace('<h1 class="tm-title tm-title_h1" lang="ru" data-test-id="articleTitle"><span>Распределённые транзакции</span></h1>',
                      '<h1 class="tm-title tm-title_h1" lang="%s" data-test-id="articleTitle"><span>%s</span></h1>' % (lang, title))
    # Not a translation, not from the sandbox: the origin link and both labels go.
    out = re.sub(r'<div class="tm-article-presenter__origin">.*?</div>', '', out, count=1, flags=re.S)
    out = re.sub(r'<div class="tm-publication-label tm-publication-label_variant-sandbox".*?</div>\s*<div class="tm-publication-label tm-publication-label_variant-translation".*?</div>', '', out, count=1, flags=re.S)
    if lang != 'ru':
        out = out.replace('<html lang="ru"', '<html lang="%s"' % lang, 1)
        out = out.replace('<div class="article-body" data-gallery-root lang="ru"', '<div class="article-body" data-gallery-root lang="%s"' % lang, 1)
        out = out.replace('content="ru_RU"', 'content="en_US"', 1)
    if hubs:
        start = out.index('<div class="tm-publication-hubs">')
        a = out.index('<!--[-->', start) + len('<!--[-->')
        b = out.index('<!--]-->\n', a)
        out = out[:a] + '\n' + ''.join(HUB_ITEM % (lang, h, name) for h, name in hubs) + out[b:]
    if tags:
        start = out.index('tm-article-presenter__meta')
        a = out.index('<ul class="tm-separated-list__list">', start)
        a = out.index('<!--[-->', a) + len('<!--[-->')
        b = out.index('<!--]-->\n', a)
        out = out[:a] + '\n' + '\n'.join(TAG_ITEM % (lang, urllib.parse.quote_plus(t), t) for t in tags) + '\n' + out[b:]
    # Body.
    start = out.index('<div xmlns="http://www.w3.org/1999/xhtml">')
    end = out.index('</div>', out.index('<p></p>', start))
    out = out[:start] + '<div xmlns="http://www.w3.org/1999/xhtml">' + body + out[end:]
    # The poll, inside #post-content-body, in the first of the two slots after the formatted
    # body (the 2025 page renders an empty slot as <!---->).
    if poll_html:
        slot = out.index('<!---->', out.index('</div>', out.index(body) + len(body)))
        out = out[:slot] + poll_html + out[slot + len('<!---->'):]
    article = out.split('<article')[1].split('</article>')[0]
    assert 'Распределённые транзакции' not in article and 'Bilgin' not in article and 'Перевод' not in article, 'replacement failed'
    open(out_file, 'w', encoding='utf-8').write(out)


build('synthetic-2025-issue25.html', '900002', '/ru/articles/900002/',
      'Синтетическая статья: опрос, встраивания, ссылки в таблицах, сущности и код с переносами',
      ('2025-10-01T08:00:00.000Z', '2025-10-01, 11:00', '1 окт 2025 в 11:00'), ISSUE25_BODY, ISSUE25_POLL)
build('news-ru-2025.html', '900003', '/ru/news/900003/', 'Вышла новая версия СУБД с асинхронным вводом-выводом',
      ('2025-10-02T07:30:00.000Z', '2025-10-02, 10:30', '2 окт 2025 в 10:30'), NEWS_RU_BODY,
      hubs=[('postgresql', 'PostgreSQL'), ('open_source', 'Open source')], tags=['postgresql', 'субд', 'релиз'])
build('news-en-2025.html', '900004', '/en/news/900004/', 'A new database release brings asynchronous I/O',
      ('2025-10-02T09:00:00.000Z', '2025-10-02, 12:00', '2 Oct 2025 at 12:00'), NEWS_EN_BODY, lang='en',
      hubs=[('postgresql', 'PostgreSQL'), ('open_source', 'Open source')], tags=['postgresql', 'database', 'release'])
