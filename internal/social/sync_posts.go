package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/social/graph"
	"github.com/ingest-dev/ingest/internal/status"
)

// SyncPosts lists the media of every account of the shard whose profile was read: page by page,
// newest first, each page committed with the cursor of the next, down to the account's
// high-water mark less the overlap; then its stories (connected accounts). An interrupted
// listing resumes from its stored cursor while that is fresh; a stale or refused cursor starts
// the listing again from the newest page, and the high-water mark bounds how far it goes.
func (s *Syncer) SyncPosts(ctx context.Context) (Stats, error) {
	var st Stats
	if _, err := EnsurePartitions(ctx, s.Pool, PartitionsAhead); err != nil {
		return st, err
	}
	if err := s.ensureShardIndex(ctx); err != nil {
		return st, err
	}
	err := s.eachAccount(ctx, []status.Status{PostsPending}, &st, s.postsOne)
	return st, err
}

func (s *Syncer) postsOne(ctx context.Context, a *accountRow, st *Stats) (bool, error) {
	log := s.Log.With("account_id", a.ID, "account", a.name())
	calls := map[string]int{}
	c, err := s.creds(ctx, a)
	if err != nil {
		return s.failAccount(ctx, a, c, PostsPending, err, st)
	}
	fail := func(err error) (bool, error) {
		if aerr := addCalls(ctx, s.Pool, a.ID, calls); aerr != nil {
			return false, aerr
		}
		return s.failAccount(ctx, a, c, PostsPending, err, st)
	}
	l := mediaListing(a.Access)
	subject := a.IGUserID
	if a.Access == Discovery {
		subject = a.Username
	}
	cursor := ""
	if a.ListCursor != "" {
		if a.ListCursorAt != nil && s.now().Sub(*a.ListCursorAt) < s.cursorTTL() {
			cursor = a.ListCursor
			log.Info("listing resumes from its stored cursor", "saved_at", a.ListCursorAt.UTC().Format(time.RFC3339))
		} else {
			log.Info("stored cursor is stale: listing again from the newest page, down to the high-water mark")
			st.Restarts++
		}
	}
	var bound *time.Time
	if a.HWM != nil && !a.FullWalk {
		b := a.HWM.Add(-s.overlap())
		bound = &b
	}
	w := &walk{s: s, listing: l, calls: calls, st: st, log: log, creds: c, accountID: a.ID}
	if a.doneThisCycle(a.ListedAt) {
		err = nil // listed already in this cycle (a rerun after the stories failed or the run stopped)
	} else {
		err = w.run(ctx, subject, cursor, bound, func(tx pgx.Tx, e *graph.Edge, rawID int64, at time.Time, items []listedItem, next string, last bool) error {
			if err := s.upsertPosts(ctx, tx, a, l.Surface, items, rawID, at); err != nil {
				return err
			}
			for _, it := range items {
				if it.TakenAt != nil && (a.ListNewest == nil || it.TakenAt.After(*a.ListNewest)) {
					t := *it.TakenAt
					a.ListNewest = &t
				}
			}
			// The page's calls are counted by the same update of the row.
			if last {
				// The listing is complete: its newest timestamp is the new high-water mark.
				_, err := tx.Exec(ctx, `UPDATE social_accounts SET posts_hwm_at = CASE WHEN $2::timestamptz IS NULL THEN posts_hwm_at ELSE greatest(posts_hwm_at, $2) END,
list_cursor = NULL, list_cursor_at = NULL, list_newest_at = NULL, list_pages = 0, listed_at = $3, full_walk = false, walk_version = $4,
cycle_calls = `+callsAdded(5)+` WHERE id = $1`,
					a.ID, a.ListNewest, at, WalkVersion, calls)
				if err != nil {
					return fmt.Errorf("finish the listing of account %d: %w", a.ID, err)
				}
			} else if _, err := tx.Exec(ctx, `UPDATE social_accounts SET list_cursor = $2, list_cursor_at = $3, list_newest_at = $4,
list_pages = list_pages + 1, cycle_calls = `+callsAdded(5)+` WHERE id = $1`, a.ID, next, s.now(), a.ListNewest, calls); err != nil {
				return fmt.Errorf("store the cursor of account %d: %w", a.ID, err)
			}
			clear(calls)
			return nil
		}, func() error {
			_, err := s.Pool.Exec(ctx, `UPDATE social_accounts SET list_cursor = NULL, list_cursor_at = NULL, list_restarts = list_restarts + 1 WHERE id = $1`, a.ID)
			return err
		})
	}
	incomplete := isIncomplete(err)
	if incomplete {
		// The listing keeps its cursor and is not complete: the account stays in posts_pending
		// and the next run goes on from there (after the stories, which do not wait).
		log.Warn("listing stopped short: resumed by the next run", "reason", err)
		st.Incomplete++
	} else if err != nil {
		return fail(err)
	}
	if a.Access == Connected && !a.doneThisCycle(a.StoriesAt) {
		sw := &walk{s: s, listing: connectedStories, calls: calls, st: st, log: log, creds: c, accountID: a.ID}
		err := sw.run(ctx, a.IGUserID, "", nil, func(tx pgx.Tx, e *graph.Edge, rawID int64, at time.Time, items []listedItem, next string, last bool) error {
			if err := s.upsertPosts(ctx, tx, a, "story", items, rawID, at); err != nil {
				return err
			}
			if last {
				// The page's calls are counted by the same update of the row.
				if _, err := tx.Exec(ctx, `UPDATE social_accounts SET stories_synced_at = $2, cycle_calls = `+callsAdded(3)+` WHERE id = $1`, a.ID, at, calls); err != nil {
					return fmt.Errorf("stories of account %d: %w", a.ID, err)
				}
				clear(calls)
				return nil
			}
			return addCalls(ctx, tx, a.ID, calls)
		}, nil)
		if isIncomplete(err) {
			log.Warn("stories stopped short: listed again by the next run", "reason", err)
			st.Incomplete++
			incomplete = true
		} else if err != nil {
			return fail(err)
		}
	}
	if incomplete {
		st.outcome("incomplete")
		return false, addCalls(ctx, s.Pool, a.ID, calls)
	}
	done := s.change("")
	done.Due = s.now().Add(s.interval())
	if len(calls) == 0 {
		// Every page counted its calls: the move is the one statement left.
		_, err = Accounts.Move(ctx, s.Pool, a.ID, PostsPending, Synced, done)
	} else {
		err = s.inWriteTx(ctx, func(tx pgx.Tx) error {
			if err := addCalls(ctx, tx, a.ID, calls); err != nil {
				return err
			}
			_, err := Accounts.Move(ctx, customPlanned{tx}, a.ID, PostsPending, Synced, done)
			return err
		})
	}
	if err != nil {
		return false, err
	}
	st.outcome(string(Synced))
	return false, nil
}

// walk pages through one listing for one record, storing every page with its items in one
// transaction per page.
type walk struct {
	s       *Syncer
	listing *listing
	creds   creds
	calls   map[string]int
	st      *Stats
	log     interface {
		Info(string, ...any)
		Warn(string, ...any)
	}
	// accountID and postID label the raw pages.
	accountID, postID int64
	// before, when set, is called with each page's items before the page is stored, to make
	// the follow-up calls whose answers must be stored with it (reply threads).
	before func(ctx context.Context, items []json.RawMessage) ([]rawPage, error)
}

// pageFn stores what a page means, in the page's transaction. next is the cursor of the next
// page; last says the walk ends with this page.
type pageFn func(tx pgx.Tx, e *graph.Edge, rawID int64, at time.Time, items []listedItem, next string, last bool) error

// run walks from cursor until the list ends (the platform announces no next page) or a page
// reaches below bound; it returns an *incompleteError, after storing the page with its cursor,
// when MaxEmptyPages pages in a row brought nothing. A cursor the platform refuses (code 100)
// restarts the walk from the newest page once, after forget.
func (w *walk) run(ctx context.Context, subject, cursor string, bound *time.Time, page pageFn, forget func() error) error {
	restarted := false
	stalled := 0
	for {
		req := w.listing.request(w.creds, subject, cursor)
		resp, err := w.s.call(ctx, w.creds, req, w.calls, w.st)
		if err != nil {
			// A page asked with a stored cursor that the platform refuses (code 100: items
			// deleted, cursors invalidated; some answer otherwise) is asked again from the newest
			// page, once, rather than failed: the cursor is the likeliest cause.
			if ae, ok := graph.AsAPI(err); ok && cursor != "" && !restarted && forget != nil && cursorSuspect(ae) {
				w.log.Warn("cursor refused: listing again from the newest page, down to the high-water mark", "endpoint", req.Endpoint, "error", ae.Message)
				if err := forget(); err != nil {
					return err
				}
				restarted, cursor, stalled = true, "", 0
				w.st.Restarts++
				continue
			}
			return err
		}
		e, err := graph.EdgeAt(resp.Body, w.listing.Path...)
		if err != nil {
			return &graph.TransportError{Endpoint: req.Endpoint, Err: err}
		}
		next, more := w.listing.Rule.Next(e)
		// Only the platform ends a list. A page that brings nothing (no items, or the cursor it
		// was asked with) is followed, but not forever: after MaxEmptyPages of them in a row the
		// walk stops short, keeps its cursor and is not marked complete.
		if len(e.Data) == 0 || next == cursor {
			stalled++
		} else {
			stalled = 0
		}
		short := more && (stalled >= MaxEmptyPages || next == "")
		items := make([]listedItem, 0, len(e.Data))
		var bad []badItem
		for i, raw := range e.Data {
			it, err := readListed(raw)
			if err != nil {
				bad = append(bad, badItem{i, err.Error()})
				continue
			}
			items = append(items, it)
		}
		// Lists come newest first: once a page reaches below the bound, what follows was read by
		// an earlier complete walk.
		old := false
		for _, it := range items {
			if bound != nil && it.TakenAt != nil && it.TakenAt.Before(*bound) {
				old = true
			}
		}
		last := !more || old
		short = short && !last
		var extra []rawPage
		if w.before != nil {
			if extra, err = w.before(ctx, e.Data); err != nil {
				return err
			}
		}
		err = w.s.inWriteTx(ctx, func(tx pgx.Tx) error {
			rawID, at, err := insertRaw(ctx, tx, rawPage{AccountID: w.accountID, PostID: w.postID, Endpoint: req.Endpoint, Request: req.String(),
				Cursor: cursor, NextCursor: e.After(), HasNext: e.HasNext(), Items: len(e.Data), RunID: w.s.RunID, Body: resp.Body})
			if err != nil {
				return err
			}
			for _, x := range extra {
				x.AccountID, x.PostID, x.RunID = w.accountID, w.postID, w.s.RunID
				if _, _, err := insertRaw(ctx, tx, x); err != nil {
					return err
				}
			}
			for _, b := range bad {
				if _, err := tx.Exec(ctx, `INSERT INTO social_rejects (kind, platform_id, post_id, reason, raw_page_id) VALUES ($1, $2, NULLIF($3, 0), $4, $5)
ON CONFLICT (kind, platform_id) DO UPDATE SET reason = EXCLUDED.reason, raw_page_id = EXCLUDED.raw_page_id`,
					req.Endpoint+"_item", fmt.Sprintf("raw %d #%d", rawID, b.index), w.postID, b.reason, rawID); err != nil {
					return fmt.Errorf("record a rejected item: %w", err)
				}
			}
			if last {
				next = ""
			}
			return page(tx, e, rawID, at, items, next, last)
		})
		if err != nil {
			return err
		}
		w.st.Pages += 1 + len(extra)
		w.st.Items += len(items)
		if len(bad) > 0 {
			w.log.Warn("items without an id or not JSON objects were kept in the raw store only", "endpoint", req.Endpoint, "items", bad)
		}
		if last {
			return nil
		}
		if short {
			return &incompleteError{Endpoint: req.Endpoint, Empty: stalled}
		}
		cursor = next
	}
}

// MaxEmptyPages is how many pages in a row that bring nothing (no items, or the cursor they
// were asked with) a walk follows before it stops short of the end.
const MaxEmptyPages = 5

// incompleteError is a walk stopped short of the platform's end: its cursor is stored, no mark
// is set, and the next run goes on from there.
type incompleteError struct {
	Endpoint string
	Empty    int // pages in a row that brought nothing
}

func (e *incompleteError) Error() string {
	if e.Empty < MaxEmptyPages {
		return e.Endpoint + ": the platform announced a next page without a cursor to ask it with: stopped short, the next run lists again"
	}
	return fmt.Sprintf("%s: %d pages in a row brought nothing while the platform still announced more: stopped short, the next run goes on from the stored cursor", e.Endpoint, e.Empty)
}

// isIncomplete reports a walk stopped short.
func isIncomplete(err error) bool {
	var ie *incompleteError
	return errors.As(err, &ie)
}

// cursorSuspect reports an answer to a request with a cursor that may be the cursor's fault:
// anything but throttling, an invalid token or a missing permission.
func cursorSuspect(ae *graph.APIError) bool {
	return !ae.Throttled() && !ae.TokenInvalid() && !ae.Permission()
}

// badItem is an item of a page that cannot be registered (no id): kept in the raw store and
// listed in social_rejects.
type badItem struct {
	index  int
	reason string
}
