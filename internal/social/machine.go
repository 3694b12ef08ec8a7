package social

import (
	"time"

	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// Account statuses: where an account's sync cycle stands.
const (
	// ProfilePending: registered, renewed, or put back by hand; `sync profiles` reads it next.
	ProfilePending status.Status = "profile_pending"
	// PostsPending: profile read; `sync posts` lists its media (and stories) next.
	PostsPending status.Status = "posts_pending"
	// Synced: listing complete; comments of its changed posts are fetched; due again at its
	// next sync (next_attempt_at).
	Synced status.Status = "synced"
	// SyncRetry: a failure that may pass (network, the platform's transient errors); retried
	// from the profile on the schedule, the listing resuming from its cursor.
	SyncRetry status.Status = "sync_retry"
	// SyncFailed: given up: permanent (business discovery cannot read the account: it does not
	// exist, is personal or age-gated) or out of retries. A person puts it back.
	SyncFailed status.Status = "sync_failed"
	// NeedsAttention: its token (or its viewer's) is expired or revoked (code 190) or lacks a
	// permission; `accounts add` with a new token puts it back.
	NeedsAttention status.Status = "needs_attention"
	// AccountInvalid: the profile failed validation (no id or username).
	AccountInvalid status.Status = "invalid"
)

// Post statuses: the comment walk and normalization of one post.
const (
	// CommentsPending: new or changed, with comments the platform lets us read.
	CommentsPending status.Status = "comments_pending"
	// CommentsRetry: a comment page failed in a way that may pass.
	CommentsRetry status.Status = "comments_retry"
	// CommentsFailed: its comments cannot be read (the post is gone, retries used up).
	CommentsFailed status.Status = "comments_failed"
	// Fetched: everything the platform gives is in the raw store; normalize takes it.
	Fetched status.Status = "fetched"
	// Normalized: its typed rows are written.
	Normalized status.Status = "normalized"
	// PostInvalid: the listed item failed validation; the reason is its last_error.
	PostInvalid status.Status = "invalid"
)

// Enrichment statuses: one post's enrichment by one provider.
const (
	EnrichPending status.Status = "enrich_pending" // waiting to be submitted
	EnrichQueued  status.Status = "enrich_queued"  // in a submitted job
	Enriched      status.Status = "enriched"       // labels stored
	EnrichRetry   status.Status = "enrich_retry"   // its job failed; resubmitted on the schedule
	EnrichFailed  status.Status = "enrich_failed"  // nothing to enrich, or out of retries
)

// Job statuses: one batch submitted to a provider.
const (
	JobNew       status.Status = "job_new"       // recorded with its idempotency token, not yet accepted
	JobRunning   status.Status = "job_running"   // accepted; polled again at next_attempt_at
	JobSucceeded status.Status = "job_succeeded" // results stored
	JobFailed    status.Status = "job_failed"    // the provider failed it or refused it
	JobExpired   status.Status = "job_expired"   // its results expired before they were read; its items were resubmitted
)

func moves(from []status.Status, to ...status.Status) []status.Transition {
	var out []status.Transition
	for _, f := range from {
		for _, t := range to {
			out = append(out, status.Transition{From: f, To: t})
		}
	}
	return out
}

func join(ts ...[]status.Transition) []status.Transition {
	var out []status.Transition
	for _, t := range ts {
		out = append(out, t...)
	}
	return out
}

// Accounts is the account machine (table social_accounts).
var Accounts = &status.Machine{
	Name:     "social_accounts",
	Table:    "social_accounts",
	Statuses: []status.Status{ProfilePending, PostsPending, Synced, SyncRetry, SyncFailed, NeedsAttention, AccountInvalid},
	Auto: join(
		moves([]status.Status{ProfilePending, Synced, SyncRetry}, PostsPending, SyncRetry, SyncFailed, NeedsAttention, AccountInvalid),
		moves([]status.Status{PostsPending}, Synced, SyncRetry, SyncFailed, NeedsAttention),
		// A new token for an account that needed one.
		moves([]status.Status{NeedsAttention}, ProfilePending),
	),
	Manual:    moves([]status.Status{PostsPending, Synced, SyncRetry, SyncFailed, NeedsAttention, AccountInvalid}, ProfilePending),
	Attention: []status.Status{SyncRetry, SyncFailed, NeedsAttention, AccountInvalid},
	Waiting:   []status.Status{Synced},
	Retry: &status.Retry{Status: SyncRetry, GiveUp: SyncFailed,
		Policy: retry.Policy{Delays: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}, Jitter: 0.2}},
	// A profile read is an attempt in flight (attempts.go): an account whose profile kills the
	// process every time ends in sync_failed instead of stopping every later sync, with the
	// code attempt_unfinished (reason_code, migration 00014).
	InFlight:    true,
	ReasonCodes: true,
}

var postStatuses = []status.Status{CommentsPending, CommentsRetry, CommentsFailed, Fetched, Normalized, PostInvalid}

// Posts is the post machine (table social_posts).
var Posts = &status.Machine{
	Name:     "social_posts",
	Table:    "social_posts",
	Statuses: postStatuses,
	Auto: join(
		// A listing that finds a post changed sends it back to work.
		moves([]status.Status{CommentsRetry, CommentsFailed, Fetched, Normalized, PostInvalid}, CommentsPending, Fetched),
		moves([]status.Status{CommentsPending}, Fetched),
		moves([]status.Status{CommentsPending, CommentsRetry}, Fetched, CommentsRetry, CommentsFailed),
		moves([]status.Status{Fetched}, Normalized, PostInvalid),
	),
	Manual:    moves([]status.Status{CommentsRetry, CommentsFailed, Normalized, PostInvalid, Fetched}, CommentsPending, Fetched),
	Attention: []status.Status{CommentsRetry, CommentsFailed, PostInvalid},
	Retry: &status.Retry{Status: CommentsRetry, GiveUp: CommentsFailed,
		Policy: retry.Policy{Delays: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}, Jitter: 0.2}},
	// A comment walk is an attempt in flight (attempts.go), as a profile read is.
	InFlight:    true,
	ReasonCodes: true,
}

// Enrichments is the enrichment machine (table social_enrichments), scoped by provider.
var Enrichments = &status.Machine{
	Name:     "social_enrichments",
	Table:    "social_enrichments",
	Scope:    "provider",
	Statuses: []status.Status{EnrichPending, EnrichQueued, Enriched, EnrichRetry, EnrichFailed},
	Auto: join(
		moves([]status.Status{EnrichPending, EnrichRetry}, EnrichQueued, EnrichFailed),
		moves([]status.Status{EnrichQueued}, Enriched, EnrichRetry, EnrichFailed, EnrichPending),
		// The post changed: enrich it again.
		moves([]status.Status{Enriched, EnrichFailed}, EnrichPending),
	),
	Manual:    moves([]status.Status{Enriched, EnrichFailed, EnrichRetry, EnrichQueued}, EnrichPending),
	Attention: []status.Status{EnrichRetry, EnrichFailed},
	Retry: &status.Retry{Status: EnrichRetry, GiveUp: EnrichFailed,
		Policy: retry.Policy{Delays: []time.Duration{5 * time.Minute, 30 * time.Minute, 2 * time.Hour}, Jitter: 0.2}},
}

// Jobs is the enrichment job machine (table social_enrich_jobs), scoped by provider.
var Jobs = &status.Machine{
	Name:     "social_enrich_jobs",
	Table:    "social_enrich_jobs",
	Scope:    "provider",
	Statuses: []status.Status{JobNew, JobRunning, JobSucceeded, JobFailed, JobExpired},
	Auto: join(
		moves([]status.Status{JobNew}, JobRunning, JobFailed),
		moves([]status.Status{JobRunning}, JobRunning, JobSucceeded, JobFailed, JobExpired),
	),
	Attention: []status.Status{JobFailed, JobExpired},
	Waiting:   []status.Status{JobRunning},
}

// Machines lists the social machines in report order.
func Machines() []*status.Machine { return []*status.Machine{Accounts, Posts, Enrichments, Jobs} }
