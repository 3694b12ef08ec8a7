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
// The Markdown is CommonMark with GFM tables and strikethrough, plus:
//
//   - spoilers as <details><summary>Title</summary> … </details> blocks with
//     Markdown inside;
//   - formulas as TeX, $…$ inline and $$ … $$ on lines of their own;
//   - embedded players as a link to the video or embedded page;
//   - tables that GFM cannot hold (cells with paragraphs or line breaks) as
//     raw HTML, one row per line;
//   - images at their original habrastorage URL, never a resized preview;
//     links and images always absolute.
//
// The layouts, and the evidence for each selector, are described in
// shared/research/habr.md; the golden files in testdata/golden show the
// Markdown produced for every real page in shared/fixtures/habr.
package habr
