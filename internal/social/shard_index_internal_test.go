package social

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/status"
)

// A shard's posts picks (comments, normalize) read the index of its shard count, and only the
// rows of its shard: its last, empty pick no longer reads every other shard's waiting posts
// (0.3-0.6 s at 10^6). The index of another count is dropped when a count's first run makes
// its own.
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
	// 16 shards; shard 3 has nothing waiting, the others 28,000 posts waiting for comments
	// (new or retried) and for normalize.
	for _, q := range []string{
		`INSERT INTO social_accounts (id, access, ig_user_id, token_sealed, token_fingerprint, status)
SELECT g, 'connected', g::text, '\x00', 'x', 'synced' FROM generate_series(1, 2000) g`,
		`INSERT INTO social_posts (account_id, ig_media_id, surface, item_hash, listed_raw_id, listed_raw_at, status)
SELECT a, 'm' || g, 'feed', '', 0, now(), (ARRAY['comments_pending', 'comments_retry', 'fetched'])[1 + g % 3]
FROM generate_series(1, 30000) g, LATERAL (SELECT 1 + g % 2000 AS a) x WHERE a % 16 <> 3`,
		`ANALYZE social_accounts`,
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
	rows, err := pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'social_posts' AND indexname LIKE 'social_posts_shard_%' ORDER BY 1`)
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
	if rows.Close(); len(names) != 1 || names[0] != shardIndexName(16) {
		t.Fatalf("shard indexes %v, want only %s", names, shardIndexName(16))
	}
	if _, err := pool.Exec(ctx, `ANALYZE social_posts`); err != nil {
		t.Fatal(err)
	}
	// The picks' statement as status.Machine.Pick writes it, one status range: the shard's
	// modulo and the parent's status among the conditions.
	pick := `SELECT r.id FROM social_posts r WHERE r.status = $1 AND r.id > $2
AND EXISTS (SELECT 1 FROM social_accounts p WHERE p.id = r.account_id AND p.status = ANY($3))
AND r.account_id % $4 = $5 AND coalesce(r.next_attempt_at, '-infinity') <= $6 ORDER BY r.id LIMIT 100`
	for _, st := range []status.Status{CommentsPending, CommentsRetry, Fetched} {
		var plan []struct {
			Plan struct {
				SharedHit  int `json:"Shared Hit Blocks"`
				SharedRead int `json:"Shared Read Blocks"`
			}
		}
		var raw []byte
		if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+pick, string(st), 0, []string{string(Synced)}, 16, 3, time.Now()).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("%v: %s", err, raw)
		}
		// A descent of the shard's index to an empty range is a handful of pages; the other
		// shards' 9,000 posts in the status are some 50 pages of any index that holds them.
		text := string(raw)
		if blocks := plan[0].Plan.SharedHit + plan[0].Plan.SharedRead; blocks > 10 || !strings.Contains(text, shardIndexName(16)) {
			t.Errorf("the %s pick of shard 3 of 16 read %d pages, or not its index: it reads other shards' rows:\n%s", st, blocks, text)
		}
	}
}
