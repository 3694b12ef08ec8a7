package social

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/pgtext"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

// People's captions, comments and biographies hold what Postgres cannot store (a NUL, which the
// platform sends as \u0000; invalid UTF-8; a lone surrogate escape), and one of them used to fail
// the store of its page and send the account to sync_failed with none of its posts. Every answer
// is cleaned (pgtext: NUL removed, the others replaced with U+FFFD) as it arrives, before
// anything of it is read or stored: the raw page, the posts registered from it and the rows
// normalize later writes from the raw page are all the same cleaned text.

// rawPagesEntity is the entity label of the social pipeline's pages in records_text_cleaned_total.
const rawPagesEntity = "social_raw_pages"

// cleanAnswer cleans an answer's body in place, naming in a warn line the request and the items
// (by id) and fields it changed, and counting the page.
func (s *Syncer) cleanAnswer(req graph.Request, resp *graph.Response) {
	body, changes := pgtext.JSON(resp.Body)
	if changes == nil {
		return
	}
	resp.Body = body
	if s.Log != nil {
		s.Log.Warn("text Postgres cannot store was cleaned out of an answer", "endpoint", req.Endpoint, "request", req.String(),
			"items", itemIDs(body, changes), "fields", pgtext.Paths(changes), "replaced", pgtext.Describe(changes))
	}
	if s.Metrics != nil {
		s.Metrics.TextCleaned.WithLabelValues(rawPagesEntity).Inc()
	}
}

// cleanRawBody is the raw store's own guard, for pages that reach it by another way than
// Syncer.call (enrichment results): the body as Postgres can store it.
func cleanRawBody(body []byte) []byte {
	out, _ := pgtext.JSON(body)
	return out
}

// itemIDs returns, for each change, the id of the innermost object around the changed string
// that has one (the post of a caption, the comment of a text, the account of a biography),
// each once, in order.
func itemIDs(body []byte, changes []pgtext.Change) []string {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil
	}
	var out []string
	for _, c := range changes {
		id := idAround(doc, c.Path)
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// idAround walks a pgtext path ($.data[3].caption, $["a b"][0]) down doc and returns the "id" of
// the innermost object on the way that has one.
func idAround(doc any, path string) string {
	id := ""
	cur := doc
	rest := strings.TrimPrefix(path, "$")
	for {
		if m, ok := cur.(map[string]any); ok {
			if s, ok := m["id"].(string); ok {
				id = s
			}
		}
		if rest == "" {
			return id
		}
		switch {
		case rest[0] == '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			m, _ := cur.(map[string]any)
			cur, rest = m[rest[1:1+end]], rest[1+end:]
		case strings.HasPrefix(rest, `["`):
			end := strings.Index(rest, `"]`)
			for end > 0 && rest[end-1] == '\\' { // an escaped quote inside the key
				next := strings.Index(rest[end+1:], `"]`)
				if next < 0 {
					return id
				}
				end += 1 + next
			}
			if end < 0 {
				return id
			}
			key, err := strconv.Unquote(rest[1 : end+1])
			if err != nil {
				return id
			}
			m, _ := cur.(map[string]any)
			cur, rest = m[key], rest[end+2:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return id
			}
			i, err := strconv.Atoi(rest[1:end])
			list, _ := cur.([]any)
			if err != nil || i < 0 || i >= len(list) {
				return id
			}
			cur, rest = list[i], rest[end+1:]
		default:
			return id
		}
	}
}
