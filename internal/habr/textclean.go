package habr

import (
	"log/slog"

	"github.com/ingest-dev/ingest/internal/pgtext"
)

// A page holding what Postgres cannot store in text (a NUL byte, bytes that are not UTF-8) used
// to fail the store of its HTML in the cache, every run. The page is cleaned as it arrives (pgtext:
// NUL removed, invalid UTF-8 replaced with U+FFFD), before it is cached and extracted, and what
// the extractor makes of it (entities such as &#0; included) is cleaned again before it is stored.

// cleanPage returns the page's HTML as Postgres can store it, and what was replaced.
func cleanPage(body []byte) (string, pgtext.Change) {
	s, c := pgtext.String(string(body))
	if c != (pgtext.Change{}) {
		c.Path = "page"
	}
	return s, c
}

// cleanArticle cleans every text of an extracted article in place and returns what it replaced,
// by field.
func cleanArticle(a *Article) []pgtext.Change {
	var out []pgtext.Change
	text := func(name string, s *string) {
		var c pgtext.Change
		if *s, c = pgtext.String(*s); c != (pgtext.Change{}) {
			c.Path = name
			out = append(out, c)
		}
	}
	list := func(name string, l *[]string) {
		var c pgtext.Change
		if *l, c = pgtext.Strings(*l); c != (pgtext.Change{}) {
			c.Path = name
			out = append(out, c)
		}
	}
	text("title", &a.Title)
	text("markdown", &a.Markdown)
	text("author", &a.Author)
	text("author_name", &a.AuthorName)
	list("hubs", &a.Hubs)
	list("tags", &a.Tags)
	text("company_alias", &a.Company.Alias)
	text("company_name", &a.Company.Name)
	text("original_author", &a.Translation.OriginalAuthor)
	text("original_url", &a.Translation.OriginalURL)
	return out
}

// noteCleaned names in the log the publication's texts that were cleaned, and counts it.
func (e *Extraction) noteCleaned(log *slog.Logger, changes []pgtext.Change) {
	if len(changes) == 0 {
		return
	}
	log.Warn("text Postgres cannot store was cleaned out of a publication", "fields", pgtext.Paths(changes), "replaced", pgtext.Describe(changes))
	e.Metrics.TextCleaned.WithLabelValues(entity).Inc()
}
