package social

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/status"
)

// A shard's accounts picks (profiles, posts) and posts picks (comments, normalize) read the
// indexes of its shard count, and only the rows of its shard: its last, empty pick no longer
// reads every other shard's waiting rows (0.3-0.6 s at 10^6 posts). The indexes of another
// count are dropped when a count's first run makes its own.
func TestShardPicksReadTheirIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	TunePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// 16 shards; shard 3 has nothing waiting, the others 30,000 accounts due (new, synced,
	// retried, their posts to list) and 28,000 posts waiting for comments (new or retried) and
	// for normalize.
	for _, q := range []string{
		`INSERT INTO social_accounts (id, access, ig_user_id, token_sealed, token_fingerprint, status, next_attempt_at)
SELECT g, 'connected', g::text, '\x00', 'x', (ARRAY['profile_pending', 'synced', 'sync_retry', 'posts_pending'])[1 + g / 16 % 4], now() - interval '1 hour'
FROM generate_series(1, 32000) g WHERE g % 16 <> 3 OR g <= 2000`,
		`UPDATE social_accounts SET status = 'synced', next_attempt_at = now() + interval '1 hour' WHERE id % 16 = 3`,
		`INSERT INTO social_posts (account_id, ig_media_id, surface, item_hash, listed_raw_id, listed_raw_at, status)
SELECT a, 'm' || g, 'feed', '', 0, now(), (ARRAY['comments_pending', 'comments_retry', 'fetched'])[1 + g % 3]
FROM generate_series(1, 30000) g, LATERAL (SELECT 1 + g % 2000 AS a) x WHERE a % 16 <> 3`,
		// Shard 3's own synced accounts, not due, are read by its synced pick: from the index
		// alone once vacuum has marked their pages all-visible, as autovacuum does.
		`VACUUM ANALYZE social_accounts`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, count := range []int{4, 16} {
		s := &Syncer{Pool: pool, Log: log, Shard: status.Shard{Count: count, Index: 3}}
		if err := s.ensureShardIndex(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	rows, err := pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE indexname ~ '^social_(accounts|posts)_shard_' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	want := []string{shardIndexName("social_accounts", 16), shardIndexName("social_posts", 16)}
	if rows.Close(); !slices.Equal(names, want) {
		t.Fatalf("shard indexes %v, want only %v", names, want)
	}
	if _, err := pool.Exec(ctx, `ANALYZE social_posts`); err != nil {
		t.Fatal(err)
	}
	// The picks' statements as status.Machine.Pick writes them, one status range: the shard's
	// modulo, the due time and, for posts, the parent's status among the conditions.
	posts := `SELECT r.id FROM social_posts r WHERE r.status = $1 AND r.id > $2
AND EXISTS (SELECT 1 FROM social_accounts p WHERE p.id = r.account_id AND p.status = ANY($3))
AND r.account_id % $4 = $5 AND coalesce(r.next_attempt_at, '-infinity') <= $6 ORDER BY r.id LIMIT 100`
	accounts := `SELECT r.id FROM social_accounts r WHERE r.status = $1 AND r.id > $2
AND r.id % $3 = $4 AND coalesce(r.next_attempt_at, '-infinity') <= $5 ORDER BY r.id LIMIT 50`
	for _, c := range []struct {
		pick, index string
		st          status.Status
	}{
		{accounts, want[0], ProfilePending},
		{accounts, want[0], Synced},
		{accounts, want[0], SyncRetry},
		{accounts, want[0], PostsPending},
		{posts, want[1], CommentsPending},
		{posts, want[1], CommentsRetry},
		{posts, want[1], Fetched},
	} {
		var plan []struct {
			Plan struct {
				SharedHit  int `json:"Shared Hit Blocks"`
				SharedRead int `json:"Shared Read Blocks"`
			}
		}
		var raw []byte
		args := []any{string(c.st), 0, 16, 3, time.Now()}
		if c.pick == posts {
			args = slices.Insert(args, 2, any([]string{string(Synced)}))
		}
		if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+c.pick, args...).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("%v: %s", err, raw)
		}
		// A descent of the shard's index to an empty range is a handful of pages (the synced
		// accounts of shard 3, none due, a few more); the other shards' 7,500-10,000 rows in the
		// status are some 50 pages of any index that holds them.
		text := string(raw)
		if blocks := plan[0].Plan.SharedHit + plan[0].Plan.SharedRead; blocks > 12 || !strings.Contains(text, c.index) {
			t.Errorf("the %s pick of shard 3 of 16 read %d pages, or not %s: it reads other shards' rows:\n%s", c.st, blocks, c.index, text)
		}
	}
}
