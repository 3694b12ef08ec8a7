package social

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// normBatch holds the typed rows of a batch of posts, one array per column, so that
// writeNormalized writes each table in one statement (unnest of the arrays) instead of one
// statement a row: a first cycle writes 140-210 rows an account.
type normBatch struct {
	posts []normPost

	// social_post_content and social_post_counts, one row per post.
	content struct {
		postID, accountID, sourceRaw               []int64
		mediaID, kind, mediaType, postedRaw        []string
		productType, caption, permalink, shortcode []*string
		postedAt                                   []time.Time
		observedAt                                 []time.Time
		likes, comments                            []*int64
		commentEnabled                             []*bool
		urlMissing                                 []bool
		upto                                       []int64
		commentCount, rejectCount                  []int
	}
	items struct {
		mediaID                                      []string
		postID                                       []int64
		position                                     []int32
		mediaType                                    []string
		mediaURL, thumbnailURL, permalink, shortcode []*string
		takenAt                                      []*time.Time
		takenRaw                                     []string
		at                                           map[string]int // index by media id: a later copy replaces an earlier one
	}
	comments struct {
		id                    []string
		postID, sourceRaw     []int64
		parent, text          []*string
		username, fromID, raw []string
		likes                 []*int64
		hidden                []*bool
		at                    []time.Time
		index                 map[string]int
	}
	tags struct {
		sources                     []string // every source whose tags are written again
		sourceID, kind, tag, source []string
		postID                      []int64
	}
	rejects struct {
		kind, platformID, reason []string
		postID, page             []int64
		index                    map[[2]string]int
	}
}

// add adds the rows of post p (its item m, posted at postedAt, and its comment threads).
func (nb *normBatch) add(p normPost, m mediaItem, postedAt time.Time, threads threadsRead) {
	nb.posts = append(nb.posts, p)
	c := &nb.content
	c.postID = append(c.postID, p.ID)
	c.accountID = append(c.accountID, p.AccountID)
	c.sourceRaw = append(c.sourceRaw, p.ListedRawID)
	c.mediaID = append(c.mediaID, m.ID)
	c.kind = append(c.kind, kindOf(p.Surface, m))
	c.mediaType = append(c.mediaType, m.MediaType)
	c.postedRaw = append(c.postedRaw, m.Timestamp)
	c.productType = append(c.productType, m.MediaProductType)
	c.caption = append(c.caption, m.Caption)
	c.permalink = append(c.permalink, m.Permalink)
	c.shortcode = append(c.shortcode, m.Shortcode)
	c.postedAt = append(c.postedAt, postedAt)
	c.observedAt = append(c.observedAt, p.ListedRawAt)
	c.likes = append(c.likes, m.LikeCount)
	c.comments = append(c.comments, m.CommentsCount)
	c.commentEnabled = append(c.commentEnabled, m.IsCommentEnabled)
	c.urlMissing = append(c.urlMissing, m.MediaURL == nil)
	c.upto = append(c.upto, threads.upto)
	c.commentCount = append(c.commentCount, len(threads.comments))
	c.rejectCount = append(c.rejectCount, len(threads.rejects))

	items := []mediaItem{m}
	if m.Children != nil && len(m.Children.Data) > 0 {
		items = m.Children.Data
	}
	for i, it := range items {
		if it.ID == "" {
			nb.reject("media_item", fmt.Sprintf("raw %d %s #%d", p.ListedRawID, m.ID, i), p.ID, "carousel child without an id", p.ListedRawID)
			continue
		}
		var taken *time.Time
		if t, err := parseTime(it.Timestamp); err == nil {
			taken = &t
		}
		nb.item(it, p.ID, i, taken)
	}
	nb.tagsOf(p.ID, "caption", m.ID, ptr(m.Caption))
	for _, cm := range threads.comments {
		nb.comment(cm, p.ID)
		nb.tagsOf(p.ID, "comment", cm.id, ptr(cm.text))
	}
	for _, r := range threads.rejects {
		nb.reject(r.kind, r.platformID, p.ID, r.reason, r.page)
	}
}

func (nb *normBatch) item(it mediaItem, postID int64, position int, taken *time.Time) {
	x := &nb.items
	if x.at == nil {
		x.at = map[string]int{}
	}
	i, ok := x.at[it.ID]
	if !ok {
		i = len(x.mediaID)
		x.at[it.ID] = i
		x.mediaID = append(x.mediaID, it.ID)
		x.postID = append(x.postID, 0)
		x.position = append(x.position, 0)
		x.mediaType = append(x.mediaType, "")
		x.mediaURL = append(x.mediaURL, nil)
		x.thumbnailURL = append(x.thumbnailURL, nil)
		x.permalink = append(x.permalink, nil)
		x.shortcode = append(x.shortcode, nil)
		x.takenAt = append(x.takenAt, nil)
		x.takenRaw = append(x.takenRaw, "")
	}
	x.postID[i], x.position[i], x.mediaType[i] = postID, int32(position), it.MediaType
	x.mediaURL[i], x.thumbnailURL[i], x.permalink[i], x.shortcode[i] = it.MediaURL, it.ThumbnailURL, it.Permalink, it.Shortcode
	x.takenAt[i], x.takenRaw[i] = taken, it.Timestamp
}

func (nb *normBatch) comment(cm normComment, postID int64) {
	x := &nb.comments
	if x.index == nil {
		x.index = map[string]int{}
	}
	i, ok := x.index[cm.id]
	if !ok {
		i = len(x.id)
		x.index[cm.id] = i
		x.id = append(x.id, cm.id)
		x.postID = append(x.postID, 0)
		x.sourceRaw = append(x.sourceRaw, 0)
		x.parent = append(x.parent, nil)
		x.text = append(x.text, nil)
		x.username = append(x.username, "")
		x.fromID = append(x.fromID, "")
		x.raw = append(x.raw, "")
		x.likes = append(x.likes, nil)
		x.hidden = append(x.hidden, nil)
		x.at = append(x.at, time.Time{})
	}
	x.postID[i], x.sourceRaw[i], x.parent[i], x.text[i] = postID, cm.page, cm.parent, cm.text
	x.username[i], x.fromID[i], x.raw[i], x.likes[i], x.hidden[i], x.at[i] = cm.username, cm.fromID, cm.raw, cm.likes, cm.hidden, cm.at
}

// tagsOf replaces the tags of one source (a caption or a comment) with those of text.
func (nb *normBatch) tagsOf(postID int64, source, sourceID, text string) {
	x := &nb.tags
	x.sources = append(x.sources, sourceID)
	hashtags, mentions := Tags(text)
	for kind, tags := range map[string][]string{"hashtag": hashtags, "mention": mentions} {
		for _, t := range tags {
			x.sourceID = append(x.sourceID, sourceID)
			x.kind = append(x.kind, kind)
			x.tag = append(x.tag, t)
			x.postID = append(x.postID, postID)
			x.source = append(x.source, source)
		}
	}
}

func (nb *normBatch) reject(kind, platformID string, postID int64, reason string, page int64) {
	x := &nb.rejects
	if x.index == nil {
		x.index = map[[2]string]int{}
	}
	key := [2]string{kind, platformID}
	if i, ok := x.index[key]; ok {
		x.postID[i], x.reason[i], x.page[i] = postID, reason, page
		return
	}
	x.index[key] = len(x.kind)
	x.kind = append(x.kind, kind)
	x.platformID = append(x.platformID, platformID)
	x.postID = append(x.postID, postID)
	x.reason = append(x.reason, reason)
	x.page = append(x.page, page)
}

// writeNormalized writes the rows of a batch of posts and moves the posts to normalized, in
// one transaction, each table in one statement; then queues each post for the providers.
func (s *Syncer) writeNormalized(ctx context.Context, nb *normBatch, st *Stats) error {
	if len(nb.posts) == 0 {
		return nil
	}
	c, it, cm, tg, rj := &nb.content, &nb.items, &nb.comments, &nb.tags, &nb.rejects
	err := s.inWriteTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO social_post_content (post_id, account_id, ig_media_id, kind, media_type, media_product_type, caption, permalink, shortcode,
posted_at, posted_raw, like_count, comments_count, is_comment_enabled, media_url_missing, source_raw_id, normalized_at)
SELECT x.*, now() FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
    $10::timestamptz[], $11::text[], $12::bigint[], $13::bigint[], $14::boolean[], $15::boolean[], $16::bigint[]) x
ON CONFLICT (post_id) DO UPDATE SET kind = EXCLUDED.kind, media_type = EXCLUDED.media_type, media_product_type = EXCLUDED.media_product_type,
caption = EXCLUDED.caption, permalink = EXCLUDED.permalink, shortcode = EXCLUDED.shortcode, posted_at = EXCLUDED.posted_at,
posted_raw = EXCLUDED.posted_raw, like_count = EXCLUDED.like_count, comments_count = EXCLUDED.comments_count,
is_comment_enabled = EXCLUDED.is_comment_enabled, media_url_missing = EXCLUDED.media_url_missing, source_raw_id = EXCLUDED.source_raw_id, normalized_at = now()`,
			c.postID, c.accountID, c.mediaID, c.kind, c.mediaType, c.productType, c.caption, c.permalink, c.shortcode,
			c.postedAt, c.postedRaw, c.likes, c.comments, c.commentEnabled, c.urlMissing, c.sourceRaw)
		b.Queue(`INSERT INTO social_post_counts (post_id, observed_at, like_count, comments_count)
SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[], $4::bigint[]) ON CONFLICT DO NOTHING`,
			c.postID, c.observedAt, c.likes, c.comments)
		if len(it.mediaID) > 0 {
			b.Queue(`INSERT INTO social_media_items (ig_media_id, post_id, position, media_type, media_url, thumbnail_url, permalink, shortcode, taken_at, taken_raw)
SELECT m, p, pos, t, u, th, pl, sc, ta, NULLIF(tr, '')
FROM unnest($1::text[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::text[]) x(m, p, pos, t, u, th, pl, sc, ta, tr)
ON CONFLICT (ig_media_id) DO UPDATE SET position = EXCLUDED.position, media_type = EXCLUDED.media_type, media_url = EXCLUDED.media_url,
thumbnail_url = EXCLUDED.thumbnail_url, permalink = EXCLUDED.permalink, shortcode = EXCLUDED.shortcode, taken_at = EXCLUDED.taken_at, taken_raw = EXCLUDED.taken_raw`,
				it.mediaID, it.postID, it.position, it.mediaType, it.mediaURL, it.thumbnailURL, it.permalink, it.shortcode, it.takenAt, it.takenRaw)
		}
		if len(cm.id) > 0 {
			b.Queue(`INSERT INTO social_comments (ig_comment_id, post_id, parent_comment_id, username, from_id, text, like_count, hidden, posted_at, posted_raw, source_raw_id, normalized_at)
SELECT x.*, now() FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::boolean[], $9::timestamptz[], $10::text[], $11::bigint[]) x
ON CONFLICT (ig_comment_id) DO UPDATE SET parent_comment_id = EXCLUDED.parent_comment_id, username = EXCLUDED.username, from_id = EXCLUDED.from_id,
text = EXCLUDED.text, like_count = EXCLUDED.like_count, hidden = EXCLUDED.hidden, posted_at = EXCLUDED.posted_at, posted_raw = EXCLUDED.posted_raw,
source_raw_id = EXCLUDED.source_raw_id, normalized_at = now()`,
				cm.id, cm.postID, cm.parent, cm.username, cm.fromID, cm.text, cm.likes, cm.hidden, cm.at, cm.raw, cm.sourceRaw)
		}
		// The tags of every source read again are replaced: a caption or comment edited since
		// loses the tags it no longer has. The delete is planned for its array, as the pool's
		// sessions plan: planned once for the connection while the table was small, the generic
		// plan read the whole table at every batch (a third of Postgres's CPU in a first cycle of
		// 500 accounts, 28 ms a batch, and growing with the table; issue 34).
		b.Queue(customPlans)
		b.Queue(`DELETE FROM social_tags WHERE source_id = ANY($1)`, tg.sources)
		b.Queue(autoPlans)
		if len(tg.sourceID) > 0 {
			b.Queue(`INSERT INTO social_tags (source_id, kind, tag, post_id, source)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) ON CONFLICT DO NOTHING`,
				tg.sourceID, tg.kind, tg.tag, tg.postID, tg.source)
		}
		if len(rj.kind) > 0 {
			b.Queue(`INSERT INTO social_rejects (kind, platform_id, post_id, reason, raw_page_id)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
ON CONFLICT (kind, platform_id) DO UPDATE SET reason = EXCLUDED.reason, raw_page_id = EXCLUDED.raw_page_id, post_id = EXCLUDED.post_id`,
				rj.kind, rj.platformID, rj.postID, rj.reason, rj.page)
		}
		// Only the posts whose comment pages moved on: for the others greatest() changed nothing
		// but cost a row version each (most posts have no comments).
		var uptoID, upto []int64
		for i, p := range nb.posts {
			if c.upto[i] > p.NormalizedUpto {
				uptoID, upto = append(uptoID, p.ID), append(upto, c.upto[i])
			}
		}
		if len(uptoID) > 0 {
			b.Queue(`UPDATE social_posts p SET normalized_upto = greatest(p.normalized_upto, x.upto)
FROM unnest($1::bigint[], $2::bigint[]) x(id, upto) WHERE p.id = x.id`, uptoID, upto)
		}
		if len(s.Providers) > 0 {
			b.Queue(`INSERT INTO social_enrichments (post_id, provider, status)
SELECT p, v, $3 FROM unnest($1::bigint[]) p CROSS JOIN unnest($2::text[]) v ORDER BY p, v ON CONFLICT (post_id, provider) DO NOTHING`,
				c.postID, s.Providers, string(EnrichPending))
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("normalize posts %d-%d: %w", c.postID[0], c.postID[len(c.postID)-1], err)
		}
		_, err := Posts.MoveMany(ctx, customPlanned{tx}, c.postID, Fetched, Normalized, s.change(""))
		return err
	})
	if err != nil {
		return err
	}
	for i := range nb.posts {
		st.Items += c.commentCount[i]
		st.outcome(string(Normalized))
		if n := c.rejectCount[i]; n > 0 {
			st.Outcomes["comments_rejected"] += n
		}
	}
	return nil
}
