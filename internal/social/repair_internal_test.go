package social

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

// The repair scan every profiles step starts with reads the partial indexes that hold the
// walks of an earlier version, never a whole table: over 10^6 posts a scan of the table cost
// every shard 2.5 s a step, for nothing once every walk is of the current version.
func TestRepairReadsItsIndexes(t *testing.T) {
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
	// Enough rows that a scan of the table is the planner's worst choice by far; all of them
	// walked under the current version but a handful.
	for _, q := range []string{
		`INSERT INTO social_accounts (id, access, ig_user_id, token_sealed, token_fingerprint, status, walk_version, listed_at, media_count)
SELECT g, 'connected', g::text, '\x00', 'x', 'synced', CASE WHEN g % 10000 = 0 THEN 0 ELSE $1 END, now(), 10 FROM generate_series(1, 50000) g`,
		`INSERT INTO social_posts (account_id, ig_media_id, surface, item_hash, listed_raw_id, listed_raw_at, status, walk_version, comments_hwm_at)
SELECT 1 + g % 50000, 'm' || g, 'feed', '', 0, now(), 'normalized', CASE WHEN g % 10000 = 0 THEN 0 ELSE $1 END, now() FROM generate_series(1, 200000) g`,
		`ANALYZE social_accounts`, `ANALYZE social_posts`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{WalkVersion}
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ sql, index string }{
		{`SELECT a.id FROM social_accounts a WHERE $1::int > 0 AND ` + staleAccounts, "social_accounts_repair_idx"},
		{`SELECT p.id FROM social_posts p WHERE $2::int > 0 AND ` + stalePosts, "social_posts_repair_idx"},
	} {
		rows, err := pool.Query(ctx, `EXPLAIN `+c.sql, WalkVersion, WalkVersion)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		all := strings.Join(lines, "\n")
		if !strings.Contains(all, c.index) || strings.Contains(all, "Seq Scan") {
			t.Errorf("the repair scan does not read %s:\n%s", c.index, all)
		}
	}
}
