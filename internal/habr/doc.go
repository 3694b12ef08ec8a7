// Package habr turns Habr (habr.com) data into records the ingest pipeline can store.
//
// The content code of the package is pure: no network, no database.
//
//   - ParseFeed reads an RSS feed item by item. A malformed item is reported
//     as an ItemError and skipped; the rest of the feed is still returned.
//   - CanonicalURL maps any known form of an article URL (old hosts,
//     tracking parameters, company blogs) to its numeric id and one
//     canonical https://habr.com URL. Identity is the id, never the URL.
//   - Extractor.Extract finds the article body in a saved HTML page of any
//     Habr layout since 2018 and converts only that body to Markdown. A page
//     that arrived but holds no complete article (a stub of a deleted post, a
//     listing page, something that is not HTML) yields an error for which
//     errors.Is(err, ErrStructure) is true: retrying such a page cannot help.
//
// The Markdown is CommonMark with GFM tables, strikethrough and task lists,
// plus:
//
//   - spoilers as <details><summary>Title</summary> … </details> blocks with
//     Markdown inside;
//   - formulas as TeX, $…$ inline and $$ … $$ on lines of their own; every
//     literal $ of the text is escaped, as are | (no text becomes a table)
//     and any *, _ or ~ that could open or close emphasis; text that would
//     read as a character reference ("&mdash;" typed by an author) is
//     written "&amp;mdash;";
//   - embedded players as a link to what they show, parameters included (a
//     YouTube player as the watch page from the second it starts at);
//     Telegram and gist scripts as a link to the post or the gist's file;
//   - figure captions as an emphasised line under the image;
//   - tables that GFM cannot hold (cells with paragraphs or line breaks,
//     merged cells) as raw HTML, one row per line; in a GFM cell every pipe
//     is escaped, in link URLs, titles, alt texts and code too;
//   - inline code with line breaks as one code span per line; HTML typed
//     into a code block without escaping (a <script>, a <form>) stays in the
//     block as code, tags included, where elsewhere it is page machinery;
//   - <sup>, <sub>, <kbd>, <mark> and <abbr> as inline HTML around Markdown;
//   - the article's own anchors as <a id="…"></a>, which its fragment links
//     ("#…") point at;
//   - images at their original habrastorage URL, never a resized preview;
//     links and images always absolute (or a fragment of the article), with
//     the URL as the author wrote it, less utm_* parameters;
//   - no line outside code ending in white space; hard breaks as "\";
//   - the article's polls where they stand (one inside the body container
//     in its place, one after it after the body): the question in bold, the
//     answers as an unchecked task list with their votes, the totals (found
//     by their words when no known element holds them).
//
// Extract also reads the page's metadata: title, author login and display
// name, publication time, hubs, tags, company blog and a translation's
// original author and URL.
//
// The layouts, and the evidence for each selector, are described in
// shared/research/habr.md; the golden files in testdata/golden show the
// Markdown produced for every real page in internal/fakes/fixtures/habr, for bodies of
// its API fixture, and for the pages of testdata/pages (news included);
// rendered by goldmark, each reads as its article, word for word.
package habr
