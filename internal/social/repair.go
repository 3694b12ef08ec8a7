package social

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// WalkVersion is the version of the walk rules a complete walk is recorded under
// (walk_version). Version 1: a walk ends only where the platform says so; the versions before
// (0) took an empty page with a next link for the end, and may have stopped short.
const WalkVersion = 1

// staleAccounts and stalePosts select the walks of an earlier version ($2 and $1 of their
// queries are WalkVersion). Each also says walk_version = 0, the only earlier version while
// WalkVersion is 1, in the words of the partial indexes that hold those rows (migration 00009,
// social_accounts_repair_idx and social_posts_repair_idx): Postgres does not prove that
// walk_version < 1 implies walk_version = 0, and without it every profiles step of every
// shard read both tables whole (2.5 s at 10^6 posts; docs/benchmarks.md). A WalkVersion 2
// comes with indexes of its own and changes these (TestRepairReadsItsIndexes fails until then).
const (
	staleAccounts = `a.walk_version < $2 AND a.walk_version = 0 AND a.listed_at IS NOT NULL`
	stalePosts    = `p.walk_version < $1 AND p.walk_version = 0 AND p.comments_hwm_at IS NOT NULL`
)

// RepairStats is what a repair scan found.
type RepairStats struct {
	Accounts int // accounts whose next listing walks to the platform's end
	Posts    int // posts whose comments are walked again in full
	Checked  int // walks of an earlier version found whole: marked, never scanned again
}

// shardCond restricts a repair query to the syncer's shard on column, with the shard count and
// index as arguments n and n+1 (any shard when unsharded).
func (s *Syncer) shardCond(column string, n int) (string, []any) {
	if s.Shard.Count <= 1 {
		return "true", nil
	}
	return fmt.Sprintf("%s %% $%d = $%d", column, n, n+1), []any{s.Shard.Count, s.Shard.Index}
}

// Repair finds, in the syncer's shard, the walks an earlier version completed (walk_version
// below WalkVersion) that stored fewer than the platform announced, and sends them to be walked
// again in full, once:
//
//   - an account whose stored feed posts are fewer than min(media_count, MaxListedMedia): its
//     next listing ignores the high-water mark (full_walk), and a synced account is due now;
//   - a normalized post whose stored comments and replies are fewer than the comments_count its
//     listing announced: it goes back to comments_pending without its comment mark.
//
// The walks found whole are marked with WalkVersion and never scanned again; a repaired walk is
// marked when it reaches the end, so a post whose comments the platform withholds (restricted
// users, age-gated media) is walked again once, not every sync. SyncProfiles runs it first.
func (s *Syncer) Repair(ctx context.Context) (RepairStats, error) {
	var rs RepairStats
	// $1 MaxListedMedia, $2 WalkVersion, then the shard, then Synced.
	cond, shard := s.shardCond("a.id", 3)
	short := `(SELECT count(*) FROM social_posts p WHERE p.account_id = a.id AND p.surface = 'feed') < least(coalesce(a.media_count, 0), $1)`
	args := append([]any{MaxListedMedia, WalkVersion}, shard...)
	tag, err := s.Pool.Exec(ctx, `UPDATE social_accounts a SET walk_version = $2
WHERE `+staleAccounts+` AND NOT a.full_walk AND `+cond+` AND NOT `+short, args...)
	if err != nil {
		return rs, fmt.Errorf("repair scan of accounts: %w", err)
	}
	rs.Checked += int(tag.RowsAffected())
	synced := fmt.Sprintf("$%d", len(args)+1)
	tag, err = s.Pool.Exec(ctx, `UPDATE social_accounts a SET full_walk = true,
    next_attempt_at = CASE WHEN a.status = `+synced+` THEN least(a.next_attempt_at, now()) ELSE a.next_attempt_at END
WHERE `+staleAccounts+` AND NOT a.full_walk AND `+cond+` AND `+short, append(args, string(Synced))...)
	if err != nil {
		return rs, fmt.Errorf("repair accounts: %w", err)
	}
	rs.Accounts = int(tag.RowsAffected())

	// $1 WalkVersion, $2 Normalized, then the shard.
	pcond, pshard := s.shardCond("p.account_id", 3)
	stored := `(SELECT count(*) FROM social_comments c WHERE c.post_id = p.id)`
	pargs := append([]any{WalkVersion, string(Normalized)}, pshard...)
	scope := stalePosts + ` AND p.status = $2 AND ` + pcond
	tag, err = s.Pool.Exec(ctx, `UPDATE social_posts p SET walk_version = $1 WHERE `+scope+` AND `+stored+` >= coalesce(p.comments_count, 0)`, pargs...)
	if err != nil {
		return rs, fmt.Errorf("repair scan of posts: %w", err)
	}
	rs.Checked += int(tag.RowsAffected())
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE social_posts p SET comments_hwm_at = NULL, comments_cursor = NULL, comments_cursor_at = NULL,
    comments_newest_at = NULL, comments_pages = 0
WHERE `+scope+` AND `+stored+` < coalesce(p.comments_count, 0) RETURNING p.id`, pargs...)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		rs.Posts = len(ids)
		_, err = Posts.MoveMany(ctx, tx, ids, Normalized, CommentsPending, status.Change{Actor: s.Actor, RunID: s.RunID,
			Reason: "repair: fewer comments stored than its listing announced, by a walk of an earlier version that took an empty page for the end"})
		return err
	})
	if err != nil {
		return rs, fmt.Errorf("repair posts: %w", err)
	}
	if rs.Accounts+rs.Posts > 0 {
		s.Log.Warn("walks an earlier version cut short are walked again in full", "accounts", rs.Accounts, "posts", rs.Posts)
	}
	return rs, nil
}
