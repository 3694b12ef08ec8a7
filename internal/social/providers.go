package social

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/social/enrichapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// Provider describes an enrichment provider: its name (the scope of its records and jobs, and
// the SOCIAL_ENRICH_<NAME>_URL / _TOKEN it is configured by), the kind of job it is sent, and
// how a post's inputs are built from the normalized tables. Submit and poll loop over these; a
// new provider is a new value.
type Provider struct {
	Name string
	Kind string
	Help string
	// Inputs returns the items to send for a post, or why there are none.
	Inputs func(ctx context.Context, db status.DB, postID int64) (items []enrichapi.Item, none string, err error)
}

// maxTextComments bounds the comments of one post sent for text analysis.
const maxTextComments = 20

// Providers are the known enrichment providers.
var Providers = []Provider{
	{Name: "vision", Kind: "labels", Help: "image recognition of a post's media (every carousel child)", Inputs: visionInputs},
	{Name: "text", Kind: "text", Help: "text analysis (sentiment, topics) of a post's caption and latest comments", Inputs: textInputs},
}

// ProviderByName finds a provider.
func ProviderByName(name string) (Provider, bool) {
	for _, p := range Providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

func ref(postID int64, subject string) string { return strconv.FormatInt(postID, 10) + "/" + subject }

// parseRef splits "<post id>/<subject>".
func parseRef(r string) (int64, string, error) {
	id, subject, ok := strings.Cut(r, "/")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || subject == "" {
		return 0, "", fmt.Errorf("result ref %q is not one of ours", r)
	}
	return n, subject, nil
}

func visionInputs(ctx context.Context, db status.DB, postID int64) ([]enrichapi.Item, string, error) {
	rows, err := db.Query(ctx, `SELECT ig_media_id, coalesce(media_type, ''), media_url FROM social_media_items WHERE post_id = $1 ORDER BY position`, postID)
	if err != nil {
		return nil, "", fmt.Errorf("media of post %d: %w", postID, err)
	}
	var out []enrichapi.Item
	missing := 0
	var id, typ string
	var u *string
	_, err = pgx.ForEachRow(rows, []any{&id, &typ, &u}, func() error {
		if u == nil || *u == "" {
			missing++
			return nil
		}
		out = append(out, enrichapi.Item{Ref: ref(postID, "media:"+id), MediaURL: *u, MediaType: typ})
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("media of post %d: %w", postID, err)
	}
	if len(out) == 0 {
		return nil, "no media URL to send: the platform omits media_url for copyrighted media", nil
	}
	return out, "", nil
}

func textInputs(ctx context.Context, db status.DB, postID int64) ([]enrichapi.Item, string, error) {
	var out []enrichapi.Item
	var caption *string
	if err := db.QueryRow(ctx, `SELECT caption FROM social_post_content WHERE post_id = $1`, postID).Scan(&caption); err != nil {
		return nil, "", fmt.Errorf("caption of post %d: %w", postID, err)
	}
	if caption != nil && strings.TrimSpace(*caption) != "" {
		out = append(out, enrichapi.Item{Ref: ref(postID, "caption"), Text: *caption})
	}
	rows, err := db.Query(ctx, `SELECT ig_comment_id, text FROM social_comments WHERE post_id = $1 AND text <> '' ORDER BY posted_at DESC, ig_comment_id LIMIT $2`,
		postID, maxTextComments)
	if err != nil {
		return nil, "", fmt.Errorf("comments of post %d: %w", postID, err)
	}
	var id, text string
	_, err = pgx.ForEachRow(rows, []any{&id, &text}, func() error {
		out = append(out, enrichapi.Item{Ref: ref(postID, "comment:"+id), Text: text})
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("comments of post %d: %w", postID, err)
	}
	if len(out) == 0 {
		return nil, "no caption and no comments to analyse", nil
	}
	return out, "", nil
}
