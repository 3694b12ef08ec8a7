package social

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// ErrNotFound is returned when no account or post matches a key.
var ErrNotFound = errors.New("no social account or post by that key")

// CountPoint is one observation of counts.
type CountPoint struct {
	At        time.Time `json:"at"`
	Followers *int64    `json:"followers_count,omitempty"`
	Follows   *int64    `json:"follows_count,omitempty"`
	Media     *int64    `json:"media_count,omitempty"`
	Likes     *int64    `json:"like_count,omitempty"`
	Comments  *int64    `json:"comments_count,omitempty"`
}

// AccountDetail is `ingest show social ACCOUNT`: the report line, the profile, counts over time
// and the status history. Never the token: only its fingerprint.
type AccountDetail struct {
	AccountReport
	Name      string                `json:"name,omitempty"`
	Biography string                `json:"biography,omitempty"`
	Website   string                `json:"website,omitempty"`
	Counts    []CountPoint          `json:"counts"`
	Recent    []PostLine            `json:"recent_posts"`
	History   []status.HistoryEntry `json:"history"`
}

// PostLine is a post in a list.
type PostLine struct {
	MediaID  string     `json:"ig_media_id"`
	Kind     string     `json:"kind"`
	Status   string     `json:"status"`
	PostedAt *time.Time `json:"posted_at,omitempty"`
	Caption  string     `json:"caption,omitempty"`
}

// MediaLine is one media item of a post.
type MediaLine struct {
	MediaID   string  `json:"ig_media_id"`
	Position  int     `json:"position"`
	MediaType string  `json:"media_type"`
	URL       *string `json:"media_url,omitempty"`
}

// CommentLine is a comment or reply; Replies are nested under their comment.
type CommentLine struct {
	ID        string        `json:"ig_comment_id"`
	Username  string        `json:"username,omitempty"`
	Text      string        `json:"text"`
	PostedAt  time.Time     `json:"posted_at"`
	PostedRaw string        `json:"posted_raw"`
	Likes     *int64        `json:"like_count,omitempty"`
	Hidden    bool          `json:"hidden,omitempty"`
	Labels    []LabelLine   `json:"labels,omitempty"`
	Replies   []CommentLine `json:"replies,omitempty"`
}

// LabelLine is one enrichment label.
type LabelLine struct {
	Provider   string   `json:"provider"`
	Subject    string   `json:"subject"`
	Label      string   `json:"label"`
	Confidence *float32 `json:"confidence,omitempty"`
}

// PostDetail is `ingest show social POST`.
type PostDetail struct {
	ID               int64                 `json:"id"`
	MediaID          string                `json:"ig_media_id"`
	Account          string                `json:"account"`
	Surface          string                `json:"surface"`
	Status           string                `json:"status"`
	LastError        string                `json:"last_error,omitempty"`
	ReasonCode       string                `json:"reason_code,omitempty"`
	Kind             string                `json:"kind,omitempty"`
	MediaType        string                `json:"media_type,omitempty"`
	ProductType      string                `json:"media_product_type,omitempty"`
	Caption          string                `json:"caption,omitempty"`
	Permalink        string                `json:"permalink,omitempty"`
	PostedAt         *time.Time            `json:"posted_at,omitempty"`
	PostedRaw        string                `json:"posted_raw,omitempty"`
	MediaURLMissing  bool                  `json:"media_url_missing"`
	Likes            *int64                `json:"like_count,omitempty"`
	CommentsCount    *int64                `json:"comments_count,omitempty"`
	Media            []MediaLine           `json:"media"`
	Hashtags         []string              `json:"hashtags"`
	Mentions         []string              `json:"mentions"`
	Counts           []CountPoint          `json:"counts"`
	Comments         []CommentLine         `json:"comments"`
	CommentsTotal    int64                 `json:"comments_total"`
	Labels           []LabelLine           `json:"labels"`
	Enrichment       map[string]string     `json:"enrichment"`
	Rejects          []Reject              `json:"rejects"`
	RawPages         int64                 `json:"raw_pages"`
	History          []status.HistoryEntry `json:"history"`
	commentsByParent map[string][]CommentLine
}

// IsPost reports whether key is the media id of a known post.
func IsPost(ctx context.Context, db status.DB, key string) (bool, error) {
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM social_posts WHERE ig_media_id = $1`, key).Scan(&n); err != nil {
		return false, fmt.Errorf("look up post %s: %w", key, err)
	}
	return n > 0, nil
}

// ShowAccount reads one account by username, IG user id or "id:N".
func ShowAccount(ctx context.Context, db status.DB, key string) (AccountDetail, error) {
	var d AccountDetail
	r, err := BuildReport(ctx, db, ReportOptions{Account: key, Limit: 1})
	if err != nil {
		return d, err
	}
	if len(r.Accounts) == 0 {
		return d, ErrNotFound
	}
	d.AccountReport = r.Accounts[0]
	var name, bio, site *string
	if err := db.QueryRow(ctx, `SELECT name, biography, website FROM social_accounts WHERE id = $1`, d.ID).Scan(&name, &bio, &site); err != nil {
		return d, fmt.Errorf("account %d: %w", d.ID, err)
	}
	d.Name, d.Biography, d.Website = deref(name), deref(bio), deref(site)
	if d.Counts, err = collect(ctx, db, `SELECT observed_at, followers_count, follows_count, media_count FROM social_account_counts
WHERE account_id = $1 ORDER BY observed_at DESC LIMIT 10`, func(row pgx.CollectableRow) (CountPoint, error) {
		var c CountPoint
		return c, row.Scan(&c.At, &c.Followers, &c.Follows, &c.Media)
	}, d.ID); err != nil {
		return d, err
	}
	if d.Recent, err = collect(ctx, db, `SELECT p.ig_media_id, coalesce(c.kind, p.surface), p.status, coalesce(c.posted_at, p.taken_at), coalesce(c.caption, '')
FROM social_posts p LEFT JOIN social_post_content c ON c.post_id = p.id WHERE p.account_id = $1 ORDER BY p.taken_at DESC NULLS LAST LIMIT 10`,
		func(row pgx.CollectableRow) (PostLine, error) {
			var p PostLine
			return p, row.Scan(&p.MediaID, &p.Kind, &p.Status, &p.PostedAt, &p.Caption)
		}, d.ID); err != nil {
		return d, err
	}
	d.History, err = Accounts.History(ctx, db, d.ID)
	return d, err
}

// maxShownComments bounds the top-level comments `show` lists (--json has the same bound; the
// total is given).
const maxShownComments = 50

// ShowPost reads one post by its media id, with its comments threaded and its labels.
func ShowPost(ctx context.Context, db status.DB, mediaID string) (PostDetail, error) {
	d := PostDetail{MediaID: mediaID, Enrichment: map[string]string{}, commentsByParent: map[string][]CommentLine{}}
	var kind, mtype, ptype, caption, permalink, lastErr, praw *string
	var missing *bool
	err := db.QueryRow(ctx, `SELECT p.id, coalesce(a.username, a.ig_user_id, ''), p.surface, p.status, p.last_error, coalesce(p.reason_code, ''), c.kind, c.media_type,
c.media_product_type, c.caption, c.permalink, coalesce(c.posted_at, p.taken_at), coalesce(c.posted_raw, p.taken_raw), c.media_url_missing,
c.like_count, coalesce(c.comments_count, p.comments_count)
FROM social_posts p JOIN social_accounts a ON a.id = p.account_id LEFT JOIN social_post_content c ON c.post_id = p.id WHERE p.ig_media_id = $1`, mediaID).
		Scan(&d.ID, &d.Account, &d.Surface, &d.Status, &lastErr, &d.ReasonCode, &kind, &mtype, &ptype, &caption, &permalink, &d.PostedAt, &praw, &missing, &d.Likes, &d.CommentsCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("post %s: %w", mediaID, err)
	}
	d.LastError, d.Kind, d.MediaType, d.ProductType = deref(lastErr), deref(kind), deref(mtype), deref(ptype)
	d.Caption, d.Permalink, d.PostedRaw, d.MediaURLMissing = deref(caption), deref(permalink), deref(praw), missing != nil && *missing
	if d.Media, err = collect(ctx, db, `SELECT ig_media_id, position, coalesce(media_type, ''), media_url FROM social_media_items WHERE post_id = $1 ORDER BY position`,
		func(row pgx.CollectableRow) (MediaLine, error) {
			var m MediaLine
			return m, row.Scan(&m.MediaID, &m.Position, &m.MediaType, &m.URL)
		}, d.ID); err != nil {
		return d, err
	}
	tags, err := collect(ctx, db, `SELECT kind, tag FROM social_tags WHERE post_id = $1 AND source = 'caption' ORDER BY kind, tag`,
		func(row pgx.CollectableRow) ([2]string, error) {
			var t [2]string
			return t, row.Scan(&t[0], &t[1])
		}, d.ID)
	if err != nil {
		return d, err
	}
	d.Hashtags, d.Mentions = []string{}, []string{}
	for _, t := range tags {
		if t[0] == "hashtag" {
			d.Hashtags = append(d.Hashtags, t[1])
		} else {
			d.Mentions = append(d.Mentions, t[1])
		}
	}
	if d.Counts, err = collect(ctx, db, `SELECT observed_at, like_count, comments_count FROM social_post_counts WHERE post_id = $1 ORDER BY observed_at DESC LIMIT 10`,
		func(row pgx.CollectableRow) (CountPoint, error) {
			var c CountPoint
			return c, row.Scan(&c.At, &c.Likes, &c.Comments)
		}, d.ID); err != nil {
		return d, err
	}
	if d.Labels, err = collect(ctx, db, `SELECT provider, subject, label, confidence FROM social_labels WHERE post_id = $1 ORDER BY provider, subject, confidence DESC`,
		func(row pgx.CollectableRow) (LabelLine, error) {
			var l LabelLine
			return l, row.Scan(&l.Provider, &l.Subject, &l.Label, &l.Confidence)
		}, d.ID); err != nil {
		return d, err
	}
	byComment := map[string][]LabelLine{}
	for _, l := range d.Labels {
		if len(l.Subject) > 8 && l.Subject[:8] == "comment:" {
			byComment[l.Subject[8:]] = append(byComment[l.Subject[8:]], l)
		}
	}
	rows, err := db.Query(ctx, `SELECT provider, status || coalesce(': ' || last_error, '') FROM social_enrichments WHERE post_id = $1`, d.ID)
	if err != nil {
		return d, fmt.Errorf("enrichment of post %d: %w", d.ID, err)
	}
	var prov, st string
	if _, err := pgx.ForEachRow(rows, []any{&prov, &st}, func() error { d.Enrichment[prov] = st; return nil }); err != nil {
		return d, fmt.Errorf("enrichment of post %d: %w", d.ID, err)
	}
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM social_comments WHERE post_id = $1),
(SELECT count(*) FROM social_raw_pages WHERE post_id = $1 OR id = (SELECT listed_raw_id FROM social_posts WHERE id = $1))`, d.ID).
		Scan(&d.CommentsTotal, &d.RawPages); err != nil {
		return d, fmt.Errorf("post %d: %w", d.ID, err)
	}
	comments, err := collect(ctx, db, `(SELECT ig_comment_id, coalesce(parent_comment_id, ''), coalesce(username, ''), text, posted_at, posted_raw, like_count,
coalesce(hidden, false) FROM social_comments WHERE post_id = $1 AND parent_comment_id IS NULL ORDER BY posted_at DESC LIMIT $2)
UNION ALL (SELECT r.ig_comment_id, r.parent_comment_id, coalesce(r.username, ''), r.text, r.posted_at, r.posted_raw, r.like_count, coalesce(r.hidden, false)
FROM social_comments r WHERE r.post_id = $1 AND r.parent_comment_id IN (SELECT ig_comment_id FROM social_comments WHERE post_id = $1
AND parent_comment_id IS NULL ORDER BY posted_at DESC LIMIT $2) ORDER BY r.posted_at)`,
		func(row pgx.CollectableRow) (CommentLine, error) {
			var c CommentLine
			var parent string
			err := row.Scan(&c.ID, &parent, &c.Username, &c.Text, &c.PostedAt, &c.PostedRaw, &c.Likes, &c.Hidden)
			c.Labels = byComment[c.ID]
			d.commentsByParent[parent] = append(d.commentsByParent[parent], c)
			return c, err
		}, d.ID, maxShownComments)
	if err != nil {
		return d, err
	}
	_ = comments
	for _, c := range d.commentsByParent[""] {
		c.Replies = d.commentsByParent[c.ID]
		d.Comments = append(d.Comments, c)
	}
	if d.Comments == nil {
		d.Comments = []CommentLine{}
	}
	if d.Rejects, err = collect(ctx, db, `SELECT kind, platform_id, post_id, reason FROM social_rejects WHERE post_id = $1 ORDER BY platform_id LIMIT 20`,
		func(row pgx.CollectableRow) (Reject, error) {
			var x Reject
			return x, row.Scan(&x.Kind, &x.PlatformID, &x.PostID, &x.Reason)
		}, d.ID); err != nil {
		return d, err
	}
	d.History, err = Posts.History(ctx, db, d.ID)
	return d, err
}
