package social

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// MaxListedMedia is how many of an account's newest media the platform lists at most.
const MaxListedMedia = 10_000

// Capability says whether one part of seed 003's per-account sync was done for an account,
// and if not, why.
type Capability struct {
	What   string `json:"what"`
	Synced bool   `json:"synced"`
	Detail string `json:"detail"`
}

// AccountReport is one account in `ingest social status`.
type AccountReport struct {
	ID               int64            `json:"id"`
	Username         string           `json:"username,omitempty"`
	IGUserID         string           `json:"ig_user_id,omitempty"`
	Access           string           `json:"access"`
	Via              string           `json:"via,omitempty"`
	TokenFingerprint string           `json:"token_fingerprint,omitempty"`
	Status           string           `json:"status"`
	LastError        string           `json:"last_error,omitempty"`
	ReasonCode       string           `json:"reason_code,omitempty"`
	NextSyncAt       *time.Time       `json:"next_sync_at,omitempty"`
	ProfileSyncedAt  *time.Time       `json:"profile_synced_at,omitempty"`
	Followers        *int64           `json:"followers_count,omitempty"`
	Follows          *int64           `json:"follows_count,omitempty"`
	MediaCount       *int64           `json:"media_count,omitempty"`
	CountsKept       int64            `json:"counts_kept"`
	Posts            map[string]int64 `json:"posts_by_status"`
	Stories          int64            `json:"stories"`
	Comments         int64            `json:"comments"`
	HighWaterMark    *time.Time       `json:"posts_high_water_mark,omitempty"`
	ListingCursor    bool             `json:"listing_in_progress"`
	CycleCalls       map[string]int   `json:"cycle_calls"`
	LastCycleCalls   map[string]int   `json:"last_cycle_calls,omitempty"`
	LastCycle        *time.Time       `json:"last_cycle_started_at,omitempty"`
	Capabilities     []Capability     `json:"capabilities"`
	// Incomplete names the walks of the account that did not reach the platform's end: a
	// listing or comment walks stopped short (resumed by the next run), or cut short by an
	// earlier version (walked again in full by the next sync).
	Incomplete []string `json:"incomplete,omitempty"`
	fullWalk   bool
	oldWalk    bool             // its last complete listing was made by an earlier version (walk_version 0)
	Enrichment map[string]int64 `json:"enrichment_by_status,omitempty"`
}

// Park is a parked token or the app.
type Park struct {
	Key    string    `json:"key"`
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

// Reject is a record that failed validation below the post level.
type Reject struct {
	Kind       string `json:"kind"`
	PlatformID string `json:"platform_id"`
	PostID     *int64 `json:"post_id,omitempty"`
	Reason     string `json:"reason"`
}

// Report is `ingest social status`.
type Report struct {
	Accounts      []AccountReport `json:"accounts"`
	AccountsTotal int64           `json:"accounts_total"`
	Counts        []MachineCount  `json:"counts"`
	Parks         []Park          `json:"parks"`
	Rejects       []Reject        `json:"rejects"`
	RejectsTotal  int64           `json:"rejects_total"`
	InvalidPosts  []Reject        `json:"invalid_posts"`
}

// MachineCount is one line of the per-machine counts.
type MachineCount struct {
	Machine string `json:"machine"`
	Scope   string `json:"scope,omitempty"`
	Status  string `json:"status"`
	Count   int64  `json:"count"`
	// Codes are the reason codes its records carry (machines with reason codes), most common
	// first; records without one are not listed.
	Codes []status.CodeTally `json:"reason_codes,omitempty"`
}

// ReportOptions narrow the report: one account (username, IG user id or record id), or the
// first Limit accounts by id.
type ReportOptions struct {
	Account string
	Limit   int
}

// BuildReport reads what `ingest social status` shows.
func BuildReport(ctx context.Context, db status.DB, o ReportOptions) (Report, error) {
	var r Report
	if o.Limit <= 0 {
		o.Limit = 50
	}
	for _, m := range Machines() {
		counts, err := m.Counts(ctx, db)
		if err != nil {
			return r, err
		}
		codes, err := m.CodeCounts(ctx, db)
		if err != nil {
			return r, err
		}
		byStatus := status.TallyCodes(codes)
		for _, c := range counts {
			r.Counts = append(r.Counts, MachineCount{Machine: m.Name, Scope: c.Scope, Status: string(c.Status), Count: c.N,
				Codes: byStatus[status.StatusKey{Scope: c.Scope, Status: c.Status}]})
		}
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM social_accounts`).Scan(&r.AccountsTotal); err != nil {
		return r, fmt.Errorf("count accounts: %w", err)
	}
	where, args := "true", []any{o.Limit}
	if o.Account != "" {
		where, args = accountMatch(2), append(args, o.Account)
	}
	rows, err := db.Query(ctx, `SELECT a.id, coalesce(a.username, ''), coalesce(a.ig_user_id, ''), a.access, coalesce(v.username, v.ig_user_id, ''),
coalesce(a.token_fingerprint, ''), a.status, coalesce(a.last_error, ''), coalesce(a.reason_code, ''), a.next_attempt_at, a.profile_synced_at, a.followers_count, a.follows_count,
a.media_count, a.posts_hwm_at, a.list_cursor IS NOT NULL, a.cycle_calls, a.last_cycle_calls, a.last_cycle_started_at, a.stories_synced_at,
a.full_walk, a.walk_version < $`+fmt.Sprint(len(args)+1)+` AND a.listed_at IS NOT NULL
FROM social_accounts a LEFT JOIN social_accounts v ON v.id = a.via_account_id WHERE `+where+` ORDER BY a.id LIMIT $1`, append(args, WalkVersion)...)
	if err != nil {
		return r, fmt.Errorf("accounts: %w", err)
	}
	var storiesAt []*time.Time
	r.Accounts, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (AccountReport, error) {
		var a AccountReport
		var cycle, last []byte
		var stories *time.Time
		err := row.Scan(&a.ID, &a.Username, &a.IGUserID, &a.Access, &a.Via, &a.TokenFingerprint, &a.Status, &a.LastError, &a.ReasonCode, &a.NextSyncAt,
			&a.ProfileSyncedAt, &a.Followers, &a.Follows, &a.MediaCount, &a.HighWaterMark, &a.ListingCursor, &cycle, &last, &a.LastCycle, &stories,
			&a.fullWalk, &a.oldWalk)
		_ = json.Unmarshal(cycle, &a.CycleCalls)
		if last != nil {
			_ = json.Unmarshal(last, &a.LastCycleCalls)
		}
		if a.Status != string(Synced) {
			a.NextSyncAt = nil
		}
		storiesAt = append(storiesAt, stories)
		return a, err
	})
	if err != nil {
		return r, fmt.Errorf("accounts: %w", err)
	}
	for i := range r.Accounts {
		if err := fillAccount(ctx, db, &r.Accounts[i], storiesAt[i]); err != nil {
			return r, err
		}
	}
	if r.Parks, err = collect(ctx, db, `SELECT key, until, reason FROM social_parks WHERE until > now() ORDER BY until DESC`, func(row pgx.CollectableRow) (Park, error) {
		var p Park
		return p, row.Scan(&p.Key, &p.Until, &p.Reason)
	}); err != nil {
		return r, err
	}
	rejectRow := func(row pgx.CollectableRow) (Reject, error) {
		var x Reject
		return x, row.Scan(&x.Kind, &x.PlatformID, &x.PostID, &x.Reason)
	}
	if r.Rejects, err = collect(ctx, db, `SELECT kind, platform_id, post_id, reason FROM social_rejects ORDER BY seen_at DESC, platform_id LIMIT 20`, rejectRow); err != nil {
		return r, err
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM social_rejects`).Scan(&r.RejectsTotal); err != nil {
		return r, fmt.Errorf("count rejects: %w", err)
	}
	r.InvalidPosts, err = collect(ctx, db, `SELECT 'post', ig_media_id, id, coalesce(last_error, '') FROM social_posts WHERE status = $1 ORDER BY id LIMIT 20`,
		rejectRow, string(PostInvalid))
	return r, err
}

func collect[T any](ctx context.Context, db status.DB, q string, fn pgx.RowToFunc[T], args ...any) ([]T, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	out, err := pgx.CollectRows(rows, fn)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// accountMatch is the condition naming one account by username, IG user id or record id
// ("id:12"), with the key as argument n.
func accountMatch(n int) string {
	return fmt.Sprintf(`(lower(a.username) = lower(ltrim($%[1]d, '@')) OR a.ig_user_id = $%[1]d OR 'id:' || a.id = $%[1]d)`, n)
}

func fillAccount(ctx context.Context, db status.DB, a *AccountReport, storiesAt *time.Time) error {
	a.Posts = map[string]int64{}
	rows, err := db.Query(ctx, `SELECT status, surface, count(*) FROM social_posts WHERE account_id = $1 GROUP BY 1, 2`, a.ID)
	if err != nil {
		return fmt.Errorf("posts of account %d: %w", a.ID, err)
	}
	var st, surface string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&st, &surface, &n}, func() error {
		if surface == "story" {
			a.Stories += n
		} else {
			a.Posts[st] += n
		}
		return nil
	}); err != nil {
		return fmt.Errorf("posts of account %d: %w", a.ID, err)
	}
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM social_comments c JOIN social_posts p ON p.id = c.post_id WHERE p.account_id = $1),
(SELECT count(*) FROM social_account_counts WHERE account_id = $1)`, a.ID).Scan(&a.Comments, &a.CountsKept); err != nil {
		return fmt.Errorf("comments of account %d: %w", a.ID, err)
	}
	rows, err = db.Query(ctx, `SELECT e.provider || ' ' || e.status, count(*) FROM social_enrichments e JOIN social_posts p ON p.id = e.post_id
WHERE p.account_id = $1 GROUP BY 1`, a.ID)
	if err != nil {
		return fmt.Errorf("enrichment of account %d: %w", a.ID, err)
	}
	a.Enrichment = map[string]int64{}
	var k string
	if _, err := pgx.ForEachRow(rows, []any{&k, &n}, func() error { a.Enrichment[k] = n; return nil }); err != nil {
		return fmt.Errorf("enrichment of account %d: %w", a.ID, err)
	}
	if err := incomplete(ctx, db, a); err != nil {
		return err
	}
	a.Capabilities = capabilities(a, storiesAt)
	return nil
}

// incomplete fills a.Incomplete: what of the account's walks did not reach the platform's end.
func incomplete(ctx context.Context, db status.DB, a *AccountReport) error {
	var feed int64
	for _, n := range a.Posts {
		feed += n
	}
	announced := int64(-1)
	if a.MediaCount != nil {
		announced = min(*a.MediaCount, MaxListedMedia)
	}
	switch {
	case a.fullWalk:
		a.Incomplete = append(a.Incomplete, fmt.Sprintf("posts: %d of %d stored by a listing an earlier version cut short: walked again in full by the next sync", feed, announced))
	case a.oldWalk && feed < announced:
		a.Incomplete = append(a.Incomplete, fmt.Sprintf("posts: %d of %d stored by a listing an earlier version cut short: the next sync walks it again in full", feed, announced))
	case a.ListingCursor && a.Status == string(PostsPending):
		a.Incomplete = append(a.Incomplete, "posts: the listing stopped short of the platform's end: the next run goes on from its cursor")
	}
	var waiting, short int64
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = ANY($2)),
count(*) FILTER (WHERE status = $3 AND walk_version < $4 AND comments_hwm_at IS NOT NULL
    AND (SELECT count(*) FROM social_comments c WHERE c.post_id = p.id) < coalesce(comments_count, 0))
FROM social_posts p WHERE account_id = $1 AND surface = 'feed'`, a.ID, []string{string(CommentsPending), string(CommentsRetry)}, string(Normalized), WalkVersion).
		Scan(&waiting, &short); err != nil {
		return fmt.Errorf("comment walks of account %d: %w", a.ID, err)
	}
	if waiting > 0 {
		a.Incomplete = append(a.Incomplete, fmt.Sprintf("comments: %d posts wait for their comment walk (new, changed, stopped short or repaired)", waiting))
	}
	if short > 0 {
		a.Incomplete = append(a.Incomplete, fmt.Sprintf("comments: %d posts hold fewer comments than announced, walked by an earlier version that stopped short: the next sync walks them again in full", short))
	}
	return nil
}

// capabilities lists, for one account, each part of seed 003's per-account sync: done, or
// why not (what the platform cannot give).
func capabilities(a *AccountReport, storiesAt *time.Time) []Capability {
	var posts int64
	for _, n := range a.Posts {
		posts += n
	}
	out := []Capability{{What: "profile and bio", Synced: a.ProfileSyncedAt != nil, Detail: when(a.ProfileSyncedAt, "not read yet")}}
	out = append(out, Capability{What: "counts over time (followers, follows, media)", Synced: a.CountsKept > 0,
		Detail: fmt.Sprintf("%d observations", a.CountsKept)})
	postsDetail := fmt.Sprintf("%d posts and reels", posts)
	if a.MediaCount != nil && *a.MediaCount > MaxListedMedia {
		postsDetail += fmt.Sprintf("; the platform lists only the newest %d of %d: %d older ones are out of reach", MaxListedMedia, *a.MediaCount, *a.MediaCount-MaxListedMedia)
	}
	for _, why := range a.Incomplete {
		postsDetail += "; incomplete: " + why
	}
	out = append(out, Capability{What: "posts, reels, carousels", Synced: a.HighWaterMark != nil && len(a.Incomplete) == 0, Detail: postsDetail})
	if a.Access == Connected {
		out = append(out,
			Capability{What: "comments and replies", Synced: a.Comments > 0 || posts > 0, Detail: fmt.Sprintf("%d comments and replies", a.Comments)},
			Capability{What: "stories (live 24 h)", Synced: storiesAt != nil, Detail: fmt.Sprintf("%d stories; last read %s", a.Stories, when(storiesAt, "never"))})
	} else {
		out = append(out,
			Capability{What: "comments and replies", Detail: "not available: business discovery gives counts only, not the comments of accounts the app is not connected to"},
			Capability{What: "stories (live 24 h)", Detail: "not available: business discovery does not give stories"})
	}
	return append(out,
		Capability{What: "followers / following lists", Detail: "not available: the Graph API gives counts only"},
		Capability{What: "highlights", Detail: "not available: the Graph API has no highlights"},
	)
}

func when(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}
