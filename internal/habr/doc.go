// Package habr turns Habr (habr.com) data into records the ingest pipeline can store.
//
// This part of the package is pure: no network, no database.
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
// The layouts, and the evidence for each selector, are described in
// shared/research/habr.md; the golden files in testdata/golden show the
// Markdown produced for every real page in shared/fixtures/habr.
package habr
