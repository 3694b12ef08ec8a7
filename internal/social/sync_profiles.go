package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/social/graph"
	"github.com/ingest-dev/ingest/internal/status"
)

// profilePicked: new accounts, synced ones whose next sync is due, and due retries.
var profilePicked = []status.Status{ProfilePending, Synced, SyncRetry}

// SyncProfiles reads the profile of every account of the shard that is due, one after
// another, and moves it on to its posts listing. A new cycle of call counting starts here. It
// first runs the repair scan (Repair), so that walks an earlier version cut short are walked
// again in full by this run.
func (s *Syncer) SyncProfiles(ctx context.Context) (Stats, error) {
	var st Stats
	if _, err := EnsurePartitions(ctx, s.Pool, PartitionsAhead); err != nil {
		return st, err
	}
	rs, err := s.Repair(ctx)
	if err != nil {
		return st, err
	}
	st.Repairs = rs.Accounts + rs.Posts
	if err := s.countUnfinished(ctx, Accounts, profilePicked, "id", &st); err != nil {
		return st, err
	}
	if err := s.ensureShardIndex(ctx); err != nil {
		return st, err
	}
	err = s.eachAccount(ctx, profilePicked, &st, func(ctx context.Context, a *accountRow, st *Stats) (stop bool, err error) {
		_, err = s.attempt(ctx, Accounts, a.ID, a.Status, func() (moved bool, err error) {
			stop, moved, err = s.profileOne(ctx, a, st)
			return moved, err
		})
		return stop, err
	})
	return st, err
}

// eachAccount picks accounts of the shard in statuses, in batches, and hands each to fn, up to
// s.Concurrency accounts at once (fanOut), until none is left or fn asks to stop. Each account
// is handed out once a run; fn gets Stats of its own, added to st as it returns.
func (s *Syncer) eachAccount(ctx context.Context, statuses []status.Status, st *Stats,
	fn func(ctx context.Context, a *accountRow, st *Stats) (stop bool, err error)) error {
	return s.fanOut(ctx, st, AccountBatch, func(after int64) ([]int64, error) {
		return Accounts.Pick(ctx, s.Pool, status.PickParams{Statuses: statuses, After: after, Limit: AccountBatch,
			DueBy: s.now(), Shard: s.shard("id")})
	}, func(ctx context.Context, id int64, st *Stats) (bool, error) {
		a, err := loadAccount(ctx, genericPlanned{s.Pool}, id)
		if err != nil {
			return false, err
		}
		if !slicesContains(statuses, a.Status) {
			return false, nil // moved since the pick (a person, or another run before a shard change)
		}
		st.Records++
		return fn(ctx, a, st)
	})
}

func slicesContains(ss []status.Status, s status.Status) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// profile is a profile as read, validated.
type profile struct {
	ID                string  `json:"id"`
	Username          string  `json:"username"`
	Name              *string `json:"name"`
	Biography         *string `json:"biography"`
	Website           *string `json:"website"`
	ProfilePictureURL *string `json:"profile_picture_url"`
	FollowersCount    *int64  `json:"followers_count"`
	FollowsCount      *int64  `json:"follows_count"`
	MediaCount        *int64  `json:"media_count"`
}

func readProfile(body []byte, discovery bool) (profile, error) {
	raw := json.RawMessage(body)
	if discovery {
		var env struct {
			BD json.RawMessage `json:"business_discovery"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.BD == nil {
			return profile{}, errors.New("the answer has no business_discovery object")
		}
		raw = env.BD
	}
	var p profile
	if err := json.Unmarshal(raw, &p); err != nil {
		return profile{}, fmt.Errorf("the profile is not the expected JSON: %w", err)
	}
	switch {
	case p.ID == "" || !igIDRe.MatchString(p.ID):
		return p, fmt.Errorf("the profile has no valid id (%q)", p.ID)
	case p.Username == "":
		return p, errors.New("the profile has no username")
	}
	return p, nil
}

// profileOne reads the profile of account a; moved says a move of its own, which ends the
// attempt in flight, was committed.
func (s *Syncer) profileOne(ctx context.Context, a *accountRow, st *Stats) (stop, moved bool, err error) {
	if a.Status == SyncRetry && a.cycleUnfinished() && a.doneThisCycle(a.ProfileAt) {
		moved, err = s.resumeCycle(ctx, a, st)
		return false, moved, err
	}
	log := s.Log.With("account_id", a.ID, "account", a.name())
	calls := map[string]int{}
	c, err := s.creds(ctx, a)
	if err != nil {
		stop, err = s.failAccount(ctx, a, c, a.Status, err, st)
		return stop, false, err
	}
	resp, err := s.call(ctx, c, profileRequest(c, a), calls, st)
	if err != nil {
		if ae, ok := graph.AsAPI(err); ok && ae.UserNotFound() {
			err = fmt.Errorf("business discovery cannot read %s: it does not exist, is a personal account or is age-gated (%w)", a.name(), err)
			err = permanent{err}
		}
		if aerr := addCalls(ctx, s.Pool, a.ID, calls); aerr != nil {
			return false, false, aerr
		}
		stop, err = s.failAccount(ctx, a, c, a.Status, err, st)
		return stop, false, err
	}
	p, verr := readProfile(resp.Body, a.Access == Discovery)
	if verr == nil && a.Access == Connected && p.ID != a.IGUserID {
		verr = fmt.Errorf("the profile's id %s is not the account's %s", p.ID, a.IGUserID)
	}
	newCycle := a.Status != SyncRetry || !a.cycleUnfinished()
	err = s.inWriteTx(ctx, func(tx pgx.Tx) error {
		if verr == nil && a.Access == Discovery {
			var other int64
			err := tx.QueryRow(ctx, `SELECT id FROM social_accounts WHERE network = $1 AND ig_user_id = $2 AND id <> $3`, Network, p.ID, a.ID).Scan(&other)
			if err == nil {
				verr = fmt.Errorf("already tracked as account %d (the same IG user id %s)", other, p.ID)
			} else if !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("look up ig user id: %w", err)
			}
		}
		rawID, at, err := insertRaw(ctx, tx, rawPage{AccountID: a.ID, Endpoint: profileRequest(c, a).Endpoint,
			Request: profileRequest(c, a).String(), Items: 1, RunID: s.RunID, Body: resp.Body})
		if err != nil {
			return err
		}
		st.Pages++
		// The cycle's start, its call counts and the profile are one update of the row.
		set, args := []string{}, []any{a.ID, calls, at}
		if newCycle {
			set = append(set, `last_cycle_calls = CASE WHEN cycle_started_at IS NULL THEN last_cycle_calls ELSE cycle_calls END,
last_cycle_started_at = CASE WHEN cycle_started_at IS NULL THEN last_cycle_started_at ELSE cycle_started_at END,
last_cycle_finished_at = CASE WHEN cycle_started_at IS NULL THEN last_cycle_finished_at ELSE $3 END,
cycle_started_at = $3, cycle_calls = $2::jsonb`)
		} else {
			set = append(set, "cycle_calls = "+callsAdded(2))
		}
		if verr == nil {
			set = append(set, `ig_user_id = $4, username = $5, name = $6, biography = $7, website = $8,
profile_picture_url = $9, followers_count = $10, follows_count = $11, media_count = $12, profile_synced_at = $3`)
			args = append(args, p.ID, p.Username, p.Name, p.Biography, p.Website, p.ProfilePictureURL, p.FollowersCount, p.FollowsCount, p.MediaCount)
		}
		if !newCycle && verr != nil {
			args = args[:2] // $3 (the page's time) is not used
		}
		if _, err := tx.Exec(ctx, `UPDATE social_accounts SET `+strings.Join(set, ", ")+` WHERE id = $1`, args...); err != nil {
			return fmt.Errorf("store the profile of account %d: %w", a.ID, err)
		}
		clear(calls)
		if verr != nil {
			moved, err = Accounts.Move(ctx, customPlanned{tx}, a.ID, a.Status, AccountInvalid, s.change(fmt.Sprintf("profile failed validation (raw page %d): %v", rawID, verr)))
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO social_account_counts (account_id, observed_at, followers_count, follows_count, media_count)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, a.ID, at, p.FollowersCount, p.FollowsCount, p.MediaCount); err != nil {
			return fmt.Errorf("store the counts of account %d: %w", a.ID, err)
		}
		moved, err = Accounts.Move(ctx, customPlanned{tx}, a.ID, a.Status, PostsPending, s.change(""))
		return err
	})
	if err != nil {
		return false, false, err
	}
	if verr != nil {
		log.Warn("account invalid", "reason", verr)
		st.outcome(string(AccountInvalid))
	} else {
		st.outcome(string(PostsPending))
		st.Items++
	}
	return false, moved, nil
}

// resumeCycle sends an account retried from sync_retry on to the listing or stories its cycle
// still has to do, without reading the profile again: the read that began the cycle is its
// profile and its one observation of the counts, as a listing completed in it is not listed
// again (a second read would spend a call of the account's budget and store a second page and
// observation for the same cycle).
func (s *Syncer) resumeCycle(ctx context.Context, a *accountRow, st *Stats) (bool, error) {
	moved, err := Accounts.Move(ctx, s.Pool, a.ID, SyncRetry, PostsPending, s.change(""))
	if err != nil {
		return false, err
	}
	if moved {
		st.outcome(string(PostsPending))
	}
	return moved, nil
}

// permanent marks an error that retrying cannot fix.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }
