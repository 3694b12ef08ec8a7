package social

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

// A listed page registers its new posts and sends the known ones that changed back to work,
// in three statements: what changed decides where a post goes (its comments walked again only
// when their count moved), a post on its way stays there, and a post of another account is
// left to it.
func TestUpsertPostsSendsChangedPostsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, q := range []string{
		`INSERT INTO social_accounts (id, access, ig_user_id, token_sealed, token_fingerprint, status)
VALUES (1, 'connected', '1', '\x00', 'x', 'posts_pending'), (2, 'connected', '2', '\x00', 'y', 'synced')`,
		`INSERT INTO social_posts (account_id, ig_media_id, surface, item_hash, comments_count, listed_raw_id, listed_raw_at, status) VALUES
(1, 'same', 'feed', 'h', 3, 1, now(), 'normalized'),
(1, 'more-comments', 'feed', 'h', 3, 1, now(), 'normalized'),
(1, 'new-caption', 'feed', 'h', 3, 1, now(), 'normalized'),
(1, 'retrying', 'feed', 'h', 3, 1, now(), 'comments_retry'),
(2, 'other-account', 'feed', 'h', 3, 1, now(), 'normalized')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	n := func(v int) *int { return &v }
	items := []listedItem{
		{ID: "same", Hash: "h", CommentsCount: n(3)},
		{ID: "more-comments", Hash: "h2", CommentsCount: n(5)},
		{ID: "new-caption", Hash: "h2", CommentsCount: n(3)},
		{ID: "retrying", Hash: "h2", CommentsCount: n(4)},
		{ID: "other-account", Hash: "h2", CommentsCount: n(9)},
		{ID: "new-with-comments", Hash: "h", CommentsCount: n(2)},
		{ID: "new-without", Hash: "h", CommentsCount: n(0)},
	}
	s := &Syncer{Pool: pool, Actor: "test"}
	a := &accountRow{ID: 1, Access: Connected}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return s.upsertPosts(ctx, tx, a, "feed", items, 42, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		media, status string
		owner, rawID  int64
		hash          string
	}{
		{"same", "normalized", 1, 42, "h"},
		{"more-comments", "comments_pending", 1, 42, "h2"},
		{"new-caption", "fetched", 1, 42, "h2"},
		{"retrying", "comments_retry", 1, 42, "h2"},
		{"other-account", "normalized", 2, 1, "h"},
		{"new-with-comments", "comments_pending", 1, 42, "h"},
		{"new-without", "fetched", 1, 42, "h"},
	} {
		var st, hash string
		var owner, rawID int64
		if err := pool.QueryRow(ctx, `SELECT status, account_id, listed_raw_id, item_hash FROM social_posts WHERE ig_media_id = $1`, c.media).
			Scan(&st, &owner, &rawID, &hash); err != nil {
			t.Fatalf("%s: %v", c.media, err)
		}
		if st != c.status || owner != c.owner || rawID != c.rawID || hash != c.hash {
			t.Errorf("%s: %s, account %d, raw page %d, hash %s; want %s, %d, %d, %s", c.media, st, owner, rawID, hash, c.status, c.owner, c.rawID, c.hash)
		}
	}
}
