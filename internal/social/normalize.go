package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/social/graph"
	"github.com/ingest-dev/ingest/internal/status"
)

// Normalize validates the fetched posts of the shard and writes their typed rows: the post
// (kind, caption, permalink, time in UTC and as received, counts), its media items (the post
// itself, or each carousel child), its comments and replies (threaded), the hashtags and
// mentions of its caption and comments, and its counts over time; then queues it for each
// enrichment provider. Everything comes from the raw store, so normalize never calls the
// platform and can be rerun at will. A post that fails validation moves to invalid with the
// reason; a comment that does is listed in social_rejects; neither stops the others.
func (s *Syncer) Normalize(ctx context.Context) (Stats, error) {
	var st Stats
	if err := s.ensureShardIndex(ctx); err != nil {
		return st, err
	}
	var after int64
	for {
		ids, err := Posts.Pick(ctx, s.Pool, status.PickParams{Statuses: []status.Status{Fetched}, After: after, Limit: PostBatch, Shard: s.shard("account_id")})
		if err != nil || len(ids) == 0 {
			return st, err
		}
		posts, err := loadForNormalize(ctx, s.Pool, ids)
		if err != nil {
			return st, err
		}
		pages, err := listingPages(ctx, s.Pool, posts)
		if err != nil {
			return st, err
		}
		threadPages, err := s.commentPages(ctx, posts)
		if err != nil {
			return st, err
		}
		nb := &normBatch{}
		for _, p := range posts {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if err := s.normalizeOne(ctx, p, pages, threadPages, nb, &st); err != nil {
				return st, err
			}
		}
		if err := s.writeNormalized(ctx, nb, &st); err != nil {
			return st, err
		}
		after = ids[len(ids)-1]
		s.Log.Info("batch done", "posts", st.Records, "outcomes", st.Outcomes, "comments", st.Items)
		if len(ids) < PostBatch {
			return st, nil
		}
	}
}

type normPost struct {
	ID, AccountID  int64
	MediaID        string
	Surface        string
	ListedRawID    int64
	ListedRawAt    time.Time
	NormalizedUpto int64
	Status         status.Status
}

func loadForNormalize(ctx context.Context, db status.DB, ids []int64) ([]normPost, error) {
	rows, err := db.Query(ctx, `SELECT id, account_id, ig_media_id, surface, listed_raw_id, listed_raw_at, normalized_upto, status
FROM social_posts WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("load posts: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (normPost, error) {
		var p normPost
		var st string
		err := r.Scan(&p.ID, &p.AccountID, &p.MediaID, &p.Surface, &p.ListedRawID, &p.ListedRawAt, &p.NormalizedUpto, &st)
		p.Status = status.Status(st)
		return p, err
	})
}

// storedPage is a raw page read back.
type storedPage struct {
	ID       int64
	Endpoint string
	Request  string
	Body     []byte
	// items indexes a listing page's items by id, once (a page of 100 serves 100 posts).
	items map[string]json.RawMessage
}

func rawByID(ctx context.Context, db status.DB, id int64, at time.Time, cache map[int64]*storedPage) (*storedPage, error) {
	if p, ok := cache[id]; ok {
		return p, nil
	}
	p := &storedPage{ID: id}
	err := db.QueryRow(ctx, `SELECT endpoint, request, body FROM social_raw_pages WHERE id = $1 AND fetched_at = $2`, id, at).Scan(&p.Endpoint, &p.Request, &p.Body)
	if err != nil {
		return p, fmt.Errorf("read raw page %d: %w", id, err)
	}
	cache[id] = p
	return p, nil
}

// listingPages reads the listing pages the fetched posts of a batch were last listed on, in
// one query, for rawByID's cache: one read by id a page cost a plan and a round trip each
// (issue 34). A page not found here is read by rawByID, which says why.
func listingPages(ctx context.Context, db status.DB, posts []normPost) (map[int64]*storedPage, error) {
	cache := map[int64]*storedPage{}
	at := map[int64]time.Time{}
	var ids []int64
	var times []time.Time
	for _, p := range posts {
		if _, ok := at[p.ListedRawID]; ok || p.Status != Fetched {
			continue
		}
		at[p.ListedRawID] = p.ListedRawAt
		ids, times = append(ids, p.ListedRawID), append(times, p.ListedRawAt)
	}
	if len(ids) == 0 {
		return cache, nil
	}
	rows, err := db.Query(ctx, `SELECT id, fetched_at, endpoint, request, body FROM social_raw_pages WHERE id = ANY($1) AND fetched_at = ANY($2)`, ids, times)
	if err != nil {
		return nil, fmt.Errorf("read raw pages %d-%d: %w", ids[0], ids[len(ids)-1], err)
	}
	var fetched time.Time
	var pg storedPage
	_, err = pgx.ForEachRow(rows, []any{&pg.ID, &fetched, &pg.Endpoint, &pg.Request, &pg.Body}, func() error {
		if t, ok := at[pg.ID]; ok && t.Equal(fetched) {
			p := pg
			cache[pg.ID] = &p
		}
		pg = storedPage{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read raw pages %d-%d: %w", ids[0], ids[len(ids)-1], err)
	}
	return cache, nil
}

// mediaItem is a listed post, reel, story or carousel child as the platform sends it.
type mediaItem struct {
	ID               string  `json:"id"`
	Caption          *string `json:"caption"`
	CommentsCount    *int64  `json:"comments_count"`
	LikeCount        *int64  `json:"like_count"`
	MediaType        string  `json:"media_type"`
	MediaProductType *string `json:"media_product_type"`
	MediaURL         *string `json:"media_url"`
	ThumbnailURL     *string `json:"thumbnail_url"`
	Permalink        *string `json:"permalink"`
	Shortcode        *string `json:"shortcode"`
	Timestamp        string  `json:"timestamp"`
	IsCommentEnabled *bool   `json:"is_comment_enabled"`
	Children         *struct {
		Data []mediaItem `json:"data"`
	} `json:"children"`
}

// commentItem is a comment or reply as the platform sends it.
type commentItem struct {
	ID        string  `json:"id"`
	Text      *string `json:"text"`
	Timestamp string  `json:"timestamp"`
	Username  *string `json:"username"`
	From      *struct {
		ID       string `json:"id"`
		Username string `json:"username"`
	} `json:"from"`
	LikeCount *int64  `json:"like_count"`
	Hidden    *bool   `json:"hidden"`
	ParentID  *string `json:"parent_id"`
	Replies   *struct {
		Data []json.RawMessage `json:"data"`
	} `json:"replies"`
}

// kindOf names what a post is, from its types as received.
func kindOf(surface string, m mediaItem) string {
	switch {
	case surface == "story" || ptr(m.MediaProductType) == "STORY":
		return "story"
	case ptr(m.MediaProductType) == "REELS":
		return "reel"
	case m.MediaType == "CAROUSEL_ALBUM":
		return "carousel"
	case m.MediaType == "VIDEO":
		return "video"
	case m.MediaType == "IMAGE":
		return "image"
	}
	return "other"
}

func ptr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// findItem finds a post's item in its listing page.
func findItem(page *storedPage, mediaID string) (json.RawMessage, error) {
	if page.items == nil {
		l, ok := listings[page.Endpoint]
		if !ok {
			return nil, fmt.Errorf("raw page %d is a %s page, not a listing", page.ID, page.Endpoint)
		}
		e, err := graph.EdgeAt(page.Body, l.Path...)
		if err != nil {
			return nil, fmt.Errorf("raw page %d: %w", page.ID, err)
		}
		page.items = map[string]json.RawMessage{}
		for _, raw := range e.Data {
			var id struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(raw, &id) == nil && id.ID != "" {
				page.items[id.ID] = raw
			}
		}
	}
	if raw, ok := page.items[mediaID]; ok {
		return raw, nil
	}
	return nil, fmt.Errorf("raw page %d does not hold media %s", page.ID, mediaID)
}

func validateMedia(m mediaItem) (time.Time, error) {
	if m.ID == "" {
		return time.Time{}, errors.New("no id")
	}
	if m.MediaType == "" {
		return time.Time{}, errors.New("no media_type")
	}
	return parseTime(m.Timestamp)
}

// normalizeOne reads and validates post p (in status Fetched) and adds its rows to nb, written
// with the rest of its batch by writeNormalized; a post that fails validation moves to invalid
// at once.
func (s *Syncer) normalizeOne(ctx context.Context, p normPost, pages map[int64]*storedPage, threadPages map[int64][]storedPage, nb *normBatch, st *Stats) error {
	if p.Status != Fetched {
		return nil // moved since the pick (a person)
	}
	st.Records++
	log := s.Log.With("post_id", p.ID, "media_id", p.MediaID)
	page, err := rawByID(ctx, s.Pool, p.ListedRawID, p.ListedRawAt, pages)
	if err != nil {
		return err
	}
	var m mediaItem
	raw, verr := findItem(page, p.MediaID)
	if verr == nil {
		if err := json.Unmarshal(raw, &m); err != nil {
			verr = fmt.Errorf("the item is not the expected JSON: %w", err)
		}
	}
	var postedAt time.Time
	if verr == nil {
		postedAt, verr = validateMedia(m)
	}
	if verr != nil {
		reason := fmt.Sprintf("media %s (raw page %d) failed validation: %v", p.MediaID, p.ListedRawID, verr)
		if _, err := Posts.Move(ctx, s.Pool, p.ID, p.Status, PostInvalid, s.change(reason)); err != nil {
			return err
		}
		log.Warn("post invalid", "reason", reason)
		st.outcome(string(PostInvalid))
		return nil
	}
	threads := readComments(p, threadPages[p.ID])
	nb.add(p, m, postedAt, threads)
	if len(threads.rejects) > 0 {
		log.Warn("comments failed validation and were listed in social_rejects", "rejected", len(threads.rejects))
	}
	return nil
}

var (
	hashtagRe = regexp.MustCompile(`#([\p{L}\p{N}_]+)`)
	mentionRe = regexp.MustCompile(`(?:^|[^\p{L}\p{N}_.])@([A-Za-z0-9._]{1,30})`)
)

// Tags returns the hashtags and mentions of a text, lower-cased, each once.
func Tags(text string) (hashtags, mentions []string) {
	seen := map[string]bool{}
	for _, m := range hashtagRe.FindAllStringSubmatch(text, -1) {
		if t := lowerTrim(m[1]); !seen["#"+t] {
			seen["#"+t] = true
			hashtags = append(hashtags, t)
		}
	}
	for _, m := range mentionRe.FindAllStringSubmatch(text, -1) {
		if t := lowerTrim(strings.TrimRight(m[1], ".")); t != "" && !seen["@"+t] {
			seen["@"+t] = true
			mentions = append(mentions, t)
		}
	}
	return hashtags, mentions
}

// normComment is a validated comment or reply.
type normComment struct {
	id, username, fromID string
	parent, text         *string
	likes                *int64
	hidden               *bool
	at                   time.Time
	raw                  string
	page                 int64
}

type reject struct {
	kind, platformID, reason string
	page                     int64
}

type threadsRead struct {
	comments []normComment
	rejects  []reject
	upto     int64
}

// commentPages reads the comment and reply pages stored since their last normalization of a
// batch of posts, in one query, oldest first by post.
func (s *Syncer) commentPages(ctx context.Context, posts []normPost) (map[int64][]storedPage, error) {
	if len(posts) == 0 {
		return nil, nil
	}
	ids, upto := make([]int64, len(posts)), make([]int64, len(posts))
	for i, p := range posts {
		ids[i], upto[i] = p.ID, p.NormalizedUpto
	}
	rows, err := s.Pool.Query(ctx, `SELECT r.post_id, r.id, r.endpoint, r.request, r.body FROM unnest($1::bigint[], $2::bigint[]) x(post_id, upto)
CROSS JOIN LATERAL (SELECT r.post_id, r.id, r.endpoint, r.request, r.body FROM social_raw_pages r
    WHERE r.post_id = x.post_id AND r.id > x.upto AND r.endpoint = ANY($3) ORDER BY r.id) r
ORDER BY r.post_id, r.id`, ids, upto, []string{comments.Endpoint, replies.Endpoint})
	if err != nil {
		return nil, fmt.Errorf("read comment pages of posts %d-%d: %w", ids[0], ids[len(ids)-1], err)
	}
	out := map[int64][]storedPage{}
	var postID int64
	var pg storedPage
	_, err = pgx.ForEachRow(rows, []any{&postID, &pg.ID, &pg.Endpoint, &pg.Request, &pg.Body}, func() error {
		out[postID] = append(out[postID], pg)
		pg = storedPage{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read comment pages of posts %d-%d: %w", ids[0], ids[len(ids)-1], err)
	}
	return out, nil
}

// readComments reads the comment and reply pages of a post stored since its last
// normalization (commentPages), oldest first, so that a later page's copy of a comment wins.
func readComments(p normPost, pages []storedPage) threadsRead {
	out := threadsRead{upto: p.NormalizedUpto}
	index := map[string]int{}
	add := func(kind string, raw json.RawMessage, parent string, page int64, pos int) *commentItem {
		var c commentItem
		err := json.Unmarshal(raw, &c)
		var at time.Time
		if err == nil {
			if c.ID == "" {
				err = errors.New("no id")
			} else {
				at, err = parseTime(c.Timestamp)
			}
		}
		if err != nil {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("raw %d #%d", page, pos)
			}
			out.rejects = append(out.rejects, reject{kind, id, fmt.Sprintf("%s %s failed validation: %v", kind, id, err), page})
			return nil
		}
		if c.ParentID != nil && *c.ParentID != "" {
			parent = *c.ParentID
		}
		n := normComment{id: c.ID, text: c.Text, likes: c.LikeCount, hidden: c.Hidden, at: at, raw: c.Timestamp, page: page, username: ptr(c.Username)}
		if c.From != nil {
			n.fromID = c.From.ID
			if n.username == "" {
				n.username = c.From.Username
			}
		}
		if parent != "" {
			n.parent = &parent
		}
		if n.text == nil {
			empty := ""
			n.text = &empty
		}
		if i, ok := index[c.ID]; ok {
			out.comments[i] = n
		} else {
			index[c.ID] = len(out.comments)
			out.comments = append(out.comments, n)
		}
		return &c
	}
	for _, pg := range pages {
		out.upto = max(out.upto, pg.ID)
		e, err := graph.EdgeAt(pg.Body)
		if err != nil {
			out.rejects = append(out.rejects, reject{pg.Endpoint + "_page", fmt.Sprintf("raw %d", pg.ID), "page is not a list: " + err.Error(), pg.ID})
			continue
		}
		parent := ""
		if pg.Endpoint == replies.Endpoint {
			parent = repliesParent(pg.Request)
		}
		for i, raw := range e.Data {
			kind := "comment"
			if parent != "" {
				kind = "reply"
			}
			c := add(kind, raw, parent, pg.ID, i)
			if c == nil || c.Replies == nil {
				continue
			}
			for j, r := range c.Replies.Data {
				add("reply", r, c.ID, pg.ID, 1000*(i+1)+j)
			}
		}
	}
	return out
}
