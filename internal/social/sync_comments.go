package social

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/social/graph"
	"github.com/ingest-dev/ingest/internal/status"
)

// commentsPicked: posts waiting for their comment walk, and due retries.
var commentsPicked = []status.Status{CommentsPending, CommentsRetry}

// SyncComments walks the comments of every post of the shard that waits for them, once its
// account's listing is complete (the account is synced: posts first, then comments, seed 003).
// Each page of 50 comments comes with its replies inline; a thread longer than the platform
// inlines is read on through /replies before the page is stored, so a page and its threads
// commit together. A later walk of a changed post stops at comments older than its high-water
// mark less the overlap.
func (s *Syncer) SyncComments(ctx context.Context) (Stats, error) {
	var st Stats
	if _, err := EnsurePartitions(ctx, s.Pool, PartitionsAhead); err != nil {
		return st, err
	}
	if err := s.countUnfinished(ctx, Posts, commentsPicked, "account_id", &st); err != nil {
		return st, err
	}
	if err := s.ensureShardIndex(ctx); err != nil {
		return st, err
	}
	parent := &status.ParentPick{Column: "account_id", Machine: Accounts, Statuses: []status.Status{Synced}}
	cache := &credsCache{m: map[int64]credsOrErr{}}
	err := s.fanOut(ctx, &st, PostBatch, func(after int64) ([]int64, error) {
		return Posts.Pick(ctx, s.Pool, status.PickParams{Statuses: commentsPicked, After: after, Limit: PostBatch,
			DueBy: s.now(), Shard: s.shard("account_id"), Parent: parent})
	}, func(ctx context.Context, id int64, st *Stats) (bool, error) {
		return s.commentsOne(ctx, id, cache, st)
	})
	return st, err
}

// credsCache holds the credentials of the accounts whose posts a comments step walks, read
// once an account; the walks of one account's posts may run at once.
type credsCache struct {
	mu sync.Mutex
	m  map[int64]credsOrErr
}

func (c *credsCache) get(id int64) (credsOrErr, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[id]
	return v, ok
}

func (c *credsCache) set(id int64, v credsOrErr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[id] = v
}

type credsOrErr struct {
	a   *accountRow
	c   creds
	err error
}

// postRow is what the comment walk reads of a post.
type postRow struct {
	ID, AccountID      int64
	MediaID            string
	Status             status.Status
	Cursor             string
	CursorAt, HWM, New *time.Time
}

func (s *Syncer) commentsOne(ctx context.Context, id int64, cache *credsCache, st *Stats) (bool, error) {
	p := postRow{ID: id}
	var cursor *string
	var stName string
	err := genericPlanned{s.Pool}.QueryRow(ctx, `SELECT account_id, ig_media_id, status, comments_cursor, comments_cursor_at, comments_hwm_at, comments_newest_at
FROM social_posts WHERE id = $1`, id).Scan(&p.AccountID, &p.MediaID, &stName, &cursor, &p.CursorAt, &p.HWM, &p.New)
	if err != nil {
		return false, fmt.Errorf("load post %d: %w", id, err)
	}
	p.Status, p.Cursor = status.Status(stName), deref(cursor)
	if !slicesContains(commentsPicked, p.Status) {
		return false, nil
	}
	var stop bool
	_, err = s.attempt(ctx, Posts, p.ID, p.Status, func() (moved bool, err error) {
		stop, moved, err = s.walkComments(ctx, p, cache, st)
		return moved, err
	})
	return stop, err
}

// walkComments walks the comments of post p, in status p.Status, as one attempt; moved says the
// walk's end, a move that ends the attempt, was committed.
func (s *Syncer) walkComments(ctx context.Context, p postRow, cache *credsCache, st *Stats) (stop, moved bool, err error) {
	stop, err = s.walkCommentsOf(ctx, p, cache, st, &moved)
	if err != nil {
		moved = false
	}
	return stop, moved, err
}

// walkCommentsOf is walkComments; *moved is set by the last page's move.
func (s *Syncer) walkCommentsOf(ctx context.Context, p postRow, cache *credsCache, st *Stats, moved *bool) (bool, error) {
	st.Records++
	ac, ok := cache.get(p.AccountID)
	if !ok {
		ac.a, ac.err = loadAccount(ctx, genericPlanned{s.Pool}, p.AccountID)
		if ac.err == nil {
			ac.c, ac.err = s.creds(ctx, ac.a)
		}
		cache.set(p.AccountID, ac)
	}
	if ac.err != nil {
		return s.failPost(ctx, p, ac.c, ac.err, st)
	}
	log := s.Log.With("post_id", p.ID, "media_id", p.MediaID, "account", ac.a.name())
	calls := map[string]int{}
	c := ac.c
	start := ""
	if p.Cursor != "" {
		if p.CursorAt != nil && s.now().Sub(*p.CursorAt) < s.cursorTTL() {
			start = p.Cursor
		} else {
			st.Restarts++
		}
	}
	var bound *time.Time
	if p.HWM != nil {
		b := p.HWM.Add(-s.overlap())
		bound = &b
	}
	newest := p.New
	w := &walk{s: s, listing: comments, calls: calls, st: st, log: log, creds: c, accountID: p.AccountID, postID: p.ID}
	w.before = func(ctx context.Context, items []json.RawMessage) ([]rawPage, error) {
		return s.longThreads(ctx, c, items, calls, st)
	}
	err := w.run(ctx, p.MediaID, start, bound, func(tx pgx.Tx, e *graph.Edge, rawID int64, at time.Time, items []listedItem, next string, last bool) error {
		for _, it := range items {
			if it.TakenAt != nil && (newest == nil || it.TakenAt.After(*newest)) {
				t := *it.TakenAt
				newest = &t
			}
		}
		var err error
		if last {
			// The walk's end and the post's move commit together: a rerun never walks it again.
			_, err = tx.Exec(ctx, `UPDATE social_posts SET comments_hwm_at = CASE WHEN $2::timestamptz IS NULL THEN comments_hwm_at ELSE greatest(comments_hwm_at, $2) END,
comments_cursor = NULL, comments_cursor_at = NULL, comments_newest_at = NULL, comments_pages = 0, walk_version = $3 WHERE id = $1`, p.ID, newest, WalkVersion)
			if err == nil {
				*moved, err = Posts.Move(ctx, customPlanned{tx}, p.ID, p.Status, Fetched, s.change(""))
			}
		} else {
			_, err = tx.Exec(ctx, `UPDATE social_posts SET comments_cursor = $2, comments_cursor_at = $3, comments_newest_at = $4,
comments_pages = comments_pages + 1 WHERE id = $1`, p.ID, next, s.now(), newest)
		}
		if err != nil {
			return fmt.Errorf("store the comment walk of post %d: %w", p.ID, err)
		}
		return addCalls(ctx, tx, p.AccountID, calls)
	}, func() error {
		_, err := s.Pool.Exec(ctx, `UPDATE social_posts SET comments_cursor = NULL, comments_cursor_at = NULL WHERE id = $1`, p.ID)
		return err
	})
	if err != nil {
		*moved = false // the page that moved it did not commit
	}
	if isIncomplete(err) {
		// The walk keeps its cursor; the post stays where it is, and the next run goes on.
		log.Warn("comment walk stopped short: resumed by the next run", "reason", err)
		st.Incomplete++
		st.outcome("incomplete")
		return false, addCalls(ctx, s.Pool, p.AccountID, calls)
	}
	if err != nil {
		if aerr := addCalls(ctx, s.Pool, p.AccountID, calls); aerr != nil {
			return false, aerr
		}
		if ae, ok := graph.AsAPI(err); ok && ae.Code == 100 {
			err = fmt.Errorf("the post no longer exists or cannot be read: %w", err)
		} else if ok && (ae.TokenInvalid() || ae.Permission()) {
			// The rest of this account's posts wait for a person, without a call each.
			cache.set(p.AccountID, credsOrErr{a: ac.a, c: c, err: errNoCreds{"its token needs attention"}})
		}
		return s.failPost(ctx, p, c, err, st)
	}
	st.outcome(string(Fetched))
	return false, nil
}

// longThreads reads on the reply threads of a comment page that the platform did not inline
// whole, through /replies; the pages are stored with the comment page.
func (s *Syncer) longThreads(ctx context.Context, c creds, items []json.RawMessage, calls map[string]int, st *Stats) ([]rawPage, error) {
	var out []rawPage
	for _, raw := range items {
		var cm struct {
			ID      string          `json:"id"`
			Replies json.RawMessage `json:"replies"`
		}
		if json.Unmarshal(raw, &cm) != nil || cm.ID == "" || cm.Replies == nil {
			continue
		}
		inline, err := graph.EdgeAt(cm.Replies)
		if err != nil {
			continue
		}
		cursor, more := replies.Rule.Next(inline)
		stalled := 0
		for more {
			req := replies.request(c, cm.ID, cursor)
			resp, err := s.call(ctx, c, req, calls, st)
			if err != nil {
				return nil, err
			}
			e, err := graph.EdgeAt(resp.Body)
			if err != nil {
				return nil, &graph.TransportError{Endpoint: req.Endpoint, Err: err}
			}
			out = append(out, rawPage{Endpoint: req.Endpoint, Request: req.String(), Cursor: cursor, NextCursor: e.After(),
				HasNext: e.HasNext(), Items: len(e.Data), Body: resp.Body})
			st.Items += len(e.Data)
			next, again := replies.Rule.Next(e)
			if len(e.Data) == 0 || next == cursor {
				stalled++
			} else {
				stalled = 0
			}
			if again && (stalled >= MaxEmptyPages || next == "") {
				// The comment page is not stored: the walk's cursor stays before it, and the
				// next run reads the page and its threads again.
				return nil, &incompleteError{Endpoint: req.Endpoint, Empty: stalled}
			}
			cursor, more = next, again
		}
	}
	return out, nil
}

// failPost records a failed comment walk.
func (s *Syncer) failPost(ctx context.Context, p postRow, c creds, err error, st *Stats) (bool, error) {
	f := classify(ctx, err)
	log := s.Log.With("post_id", p.ID, "media_id", p.MediaID)
	switch {
	case f.stop:
		log.Warn("run stops", "reason", f.reason)
		return true, nil
	case f.attention:
		log.Warn("account needs attention", "token_of", c.ownerName, "reason", f.reason)
		st.outcome("skipped")
		return false, s.needsAttention(ctx, c.ownerID, f.reason)
	case isLeftAlone(err):
		st.outcome("skipped")
		return false, nil
	}
	out, ferr := Posts.Fail(ctx, s.Pool, p.ID, p.Status, status.Failure{Cause: f.reason, Retryable: f.retryable, Policy: s.RetryPolicy, Now: s.now()}, s.change(""))
	if ferr != nil {
		return false, ferr
	}
	if out.Moved {
		log.Warn("comments not read", "status", out.To, "retries", out.Retries, "reason", out.Reason)
		st.outcome(string(out.To))
	}
	return false, nil
}
