package social

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// upsertPosts registers the listed items of one page, or sends known ones back to work when
// they changed. A post with comments the platform lets us read (connected accounts' feed
// posts) waits for its comment walk; any other goes straight to normalization.
//
// A page is three statements whatever its length (lock and read the known, insert the new,
// update the known), plus a move per changed post: one statement a row made a later cycle,
// which lists every post of an account's first page again (up to 100), cost three round trips
// a post. The known are read first: a later cycle's page, all of whose posts are known, then
// inserts nothing, where an insert of every item that conflicted on each cost as much as the
// update (issue 34).
func (s *Syncer) upsertPosts(ctx context.Context, tx pgx.Tx, a *accountRow, surface string, items []listedItem, rawID int64, at time.Time) error {
	if len(items) == 0 {
		return nil
	}
	want := func(it listedItem) status.Status {
		if a.Access == Connected && surface == "feed" && it.CommentsCount != nil && *it.CommentsCount > 0 {
			return CommentsPending
		}
		return Fetched
	}
	type post struct {
		id, owner int64
		media, st string
		hash      string
		count     *int
	}
	lockKnown := func(media []string) ([]post, error) {
		// Planned for its array: the first pages of a first cycle, on a small table, would make
		// the connection's generic plan a scan of the table.
		rows, err := customPlanned{tx}.Query(ctx, `SELECT id, account_id, ig_media_id, status, item_hash, comments_count FROM social_posts WHERE ig_media_id = ANY($1) ORDER BY id FOR UPDATE`, media)
		if err != nil {
			return nil, fmt.Errorf("read the posts of account %d: %w", a.ID, err)
		}
		posts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (post, error) {
			var p post
			return p, r.Scan(&p.id, &p.owner, &p.media, &p.st, &p.hash, &p.count)
		})
		if err != nil {
			return nil, fmt.Errorf("read the posts of account %d: %w", a.ID, err)
		}
		return posts, nil
	}
	byMedia := map[string]listedItem{}
	var listed []string
	for _, it := range items {
		if _, dup := byMedia[it.ID]; !dup {
			listed = append(listed, it.ID)
		}
		byMedia[it.ID] = it // a post listed twice in a page keeps its last copy, as the row-by-row updates did
	}
	posts, err := lockKnown(listed)
	if err != nil {
		return err
	}
	found := make(map[string]bool, len(posts))
	for _, p := range posts {
		found[p.media] = true
	}
	var fresh []listedItem
	for _, it := range items {
		if !found[it.ID] {
			fresh = append(fresh, it) // every copy, in order: the first is the one inserted
		}
	}
	if len(fresh) > 0 {
		ids, taken, raws, counts, hashes, statuses := columns(fresh, want)
		rows, err := tx.Query(ctx, `INSERT INTO social_posts (account_id, ig_media_id, surface, taken_at, taken_raw, comments_count, item_hash, listed_raw_id, listed_raw_at, status)
SELECT $1, v.id, $3, v.taken_at, NULLIF(v.taken_raw, ''), v.comments_count, v.hash, $8, $9, v.status
FROM unnest($2::text[], $4::timestamptz[], $5::text[], $6::int[], $7::text[], $10::text[]) WITH ORDINALITY AS v(id, taken_at, taken_raw, comments_count, hash, status, n)
ORDER BY v.n ON CONFLICT (ig_media_id) DO NOTHING RETURNING ig_media_id`,
			a.ID, ids, surface, taken, raws, counts, hashes, rawID, at, statuses)
		if err != nil {
			return fmt.Errorf("register the posts of account %d: %w", a.ID, err)
		}
		inserted, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("register the posts of account %d: %w", a.ID, err)
		}
		isNew := make(map[string]bool, len(inserted))
		for _, id := range inserted {
			isNew[id] = true
		}
		// A post another transaction registered since the read conflicted: it is known too.
		var raced []string
		for _, it := range fresh {
			if !isNew[it.ID] && !found[it.ID] {
				found[it.ID] = true
				raced = append(raced, it.ID)
			}
		}
		if len(raced) > 0 {
			more, err := lockKnown(raced)
			if err != nil {
				return err
			}
			posts = append(posts, more...)
		}
	}
	var mine []listedItem
	var mineIDs []int64
	for _, p := range posts {
		if p.owner == a.ID { // else listed under another account (an account registered twice): the first keeps it
			mine = append(mine, byMedia[p.media])
			mineIDs = append(mineIDs, p.id)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	_, taken, raws, counts, hashes, _ := columns(mine, want)
	if _, err := tx.Exec(ctx, `UPDATE social_posts p SET last_seen_at = $2, listed_raw_id = $3, listed_raw_at = $2, taken_at = v.taken_at,
taken_raw = NULLIF(v.taken_raw, ''), item_hash = v.hash, comments_count = v.comments_count
FROM unnest($1::bigint[], $4::timestamptz[], $5::text[], $6::int[], $7::text[]) AS v(id, taken_at, taken_raw, comments_count, hash) WHERE p.id = v.id`,
		mineIDs, at, rawID, taken, raws, counts, hashes); err != nil {
		return fmt.Errorf("update the posts of account %d: %w", a.ID, err)
	}
	for _, p := range posts {
		it := byMedia[p.media]
		if p.owner != a.ID || p.hash == it.Hash {
			continue
		}
		// Changed: the comment walk only when its comment count moved.
		to := Fetched
		if want(it) == CommentsPending && !sameCount(p.count, it.CommentsCount) {
			to = CommentsPending
		}
		from := status.Status(p.st)
		if from == to || from == CommentsPending || from == CommentsRetry {
			continue // already on its way
		}
		if _, err := Posts.Move(ctx, customPlanned{tx}, p.id, from, to, s.change("changed since it was last listed")); err != nil {
			return err
		}
	}
	return nil
}

// columns are the items' fields as the arrays upsertPosts binds.
func columns(items []listedItem, want func(listedItem) status.Status) (ids []string, taken []*time.Time, raws []string, counts []*int, hashes, statuses []string) {
	for _, it := range items {
		ids = append(ids, it.ID)
		taken = append(taken, it.TakenAt)
		raws = append(raws, it.TakenRaw)
		counts = append(counts, it.CommentsCount)
		hashes = append(hashes, it.Hash)
		statuses = append(statuses, string(want(it)))
	}
	return
}

func sameCount(a, b *int) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
