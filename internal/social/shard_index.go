package social

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// shardIndexRe names the per-shard-count indexes of social_posts (shardIndexName).
var shardIndexRe = regexp.MustCompile(`^social_posts_shard_[0-9]+_idx$`)

// shardIndexName is the index of social_posts for a shard count: shards pick posts by
// account_id modulo the count, which the (status, id) index cannot tell apart, so a shard's
// picks read the other shards' waiting posts too, and its last, empty pick all of them (0.3-0.6
// s at 10^6 waiting posts). The count is a setting (SOCIAL_SHARDS), so the expression
// cannot be in a migration.
func shardIndexName(count int) string { return fmt.Sprintf("social_posts_shard_%d_idx", count) }

// ensureShardIndex makes the index of the syncer's shard count, over the posts that wait for a
// shard's picks (comments, normalize), unless it exists, and drops those of other counts:
// shards of two counts never run at once (the lock set), and a count's index is of no use to
// another. The shards of a count that start together create it once: the first takes the
// advisory lock, the others wait for its commit and find it made. It is built once a count,
// blocking writes to social_posts for that time (a scan of the table).
func (s *Syncer) ensureShardIndex(ctx context.Context) error {
	if s.Shard.Count <= 1 {
		return nil
	}
	name := shardIndexName(s.Shard.Count)
	var others []string
	var have bool
	rows, err := s.Pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'social_posts'`)
	if err != nil {
		return fmt.Errorf("list the indexes of social_posts: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list the indexes of social_posts: %w", err)
	}
	for _, n := range names {
		switch {
		case n == name:
			have = true
		case shardIndexRe.MatchString(n):
			others = append(others, n)
		}
	}
	if have && len(others) == 0 {
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
		// The statuses are those of the picks by shard: SyncComments' and Normalize's.
		_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON social_posts (status, (account_id %% %d), id) INCLUDE (next_attempt_at)
WHERE status IN ('%s', '%s', '%s')`, pgx.Identifier{name}.Sanitize(), s.Shard.Count, CommentsPending, CommentsRetry, Fetched))
		return err
	})
	if err != nil {
		return fmt.Errorf("index social_posts for %d shards: %w", s.Shard.Count, err)
	}
	s.Log.Info("social_posts indexed for the shard count", "index", name, "dropped", others)
	return nil
}
