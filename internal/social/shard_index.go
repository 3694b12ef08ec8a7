package social

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// shardIndexed is a table whose picks by shard read an index of the shard count: shards pick
// by an id modulo the count, which the (status, id) index cannot tell apart, so a shard's picks
// read the other shards' waiting rows too, and its last, empty pick all of them (0.3-0.6 s at
// 10^6 waiting posts; the accounts pick 6.8x slower by a third cycle at 5,000 accounts, as the
// account rows' updates left dead entries in the shared ranges). The count is a setting
// (SOCIAL_SHARDS), so the expression cannot be in a migration.
type shardIndexed struct {
	table, column string
	// statuses are those of the table's picks by shard: only their rows are in the index.
	statuses []status.Status
	include  string
}

// shardIndexedTables lists the indexed tables: the accounts (SyncProfiles' and SyncPosts' picks, by
// id) and their posts (SyncComments' and Normalize's, by account_id).
var shardIndexedTables = []shardIndexed{
	{table: "social_accounts", column: "id", statuses: slices.Concat(profilePicked, []status.Status{PostsPending}), include: "next_attempt_at"},
	{table: "social_posts", column: "account_id", statuses: []status.Status{CommentsPending, CommentsRetry, Fetched}, include: "next_attempt_at"},
}

// shardIndexRe names the per-shard-count indexes of the tables (shardIndexName).
var shardIndexRe = regexp.MustCompile(`^(social_accounts|social_posts)_shard_[0-9]+_idx$`)

// shardIndexName is the index of table for a shard count.
func shardIndexName(table string, count int) string {
	return fmt.Sprintf("%s_shard_%d_idx", table, count)
}

// ensureShardIndex makes the indexes of the syncer's shard count (shardIndexedTables), unless
// they exist, and drops those of other counts: shards of two counts never run at once (the
// lock set), and a count's index is of no use to another. Every sync step checks (one query);
// the shards of a count that start together create them once: the first takes the advisory
// lock, the others wait for its commit and find them made. Each is built once a count,
// blocking writes to its table for that time (a scan of the table).
func (s *Syncer) ensureShardIndex(ctx context.Context) error {
	if s.Shard.Count <= 1 {
		return nil
	}
	rows, err := s.Pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN ('social_accounts', 'social_posts')`)
	if err != nil {
		return fmt.Errorf("list the indexes of the social tables: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list the indexes of the social tables: %w", err)
	}
	want := map[string]bool{}
	for _, t := range shardIndexedTables {
		want[shardIndexName(t.table, s.Shard.Count)] = true
	}
	var others []string
	missing := len(want)
	for _, n := range names {
		switch {
		case want[n]:
			missing--
		case shardIndexRe.MatchString(n):
			others = append(others, n)
		}
	}
	if missing == 0 && len(others) == 0 {
		return nil
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('social_posts shard index'))`); err != nil {
			return err
		}
		for _, o := range others {
			if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+pgx.Identifier{o}.Sanitize()); err != nil {
				return err
			}
		}
		for _, t := range shardIndexedTables {
			in := make([]string, len(t.statuses))
			for i, st := range t.statuses {
				in[i] = "'" + string(st) + "'" // the statuses are constants of the package
			}
			_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (status, (%s %% %d), id) INCLUDE (%s) WHERE status IN (%s)`,
				pgx.Identifier{shardIndexName(t.table, s.Shard.Count)}.Sanitize(), t.table, t.column, s.Shard.Count, t.include, strings.Join(in, ", ")))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index the social tables for %d shards: %w", s.Shard.Count, err)
	}
	s.Log.Info("social_accounts and social_posts indexed for the shard count", "shards", s.Shard.Count, "dropped", others)
	return nil
}
