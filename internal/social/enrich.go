package social

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social/enrichapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// Defaults of an Enricher.
const (
	// DefaultJobCap is how many unfinished jobs are kept at one provider (AWS Rekognition
	// Video's default quota is 20 concurrent jobs).
	DefaultJobCap = 20
	// DefaultJobPosts is how many posts go into one job.
	DefaultJobPosts = 20
	// DefaultPollMin and DefaultPollMax bound the wait between two polls of a job: it doubles
	// from the first to the second.
	DefaultPollMin = 5 * time.Second
	DefaultPollMax = 5 * time.Minute
)

// Enricher submits posts to the configured providers and polls their jobs.
type Enricher struct {
	Pool    *pgxpool.Pool
	Log     *slog.Logger
	Metrics *metrics.Metrics
	Actor   string
	RunID   int64
	// Clients are the configured providers by name; the others are left alone.
	Clients map[string]*enrichapi.Client
	// Cap, JobPosts, PollMin, PollMax: see the defaults.
	Cap, JobPosts    int
	PollMin, PollMax time.Duration
	Now              func() time.Time
	// RetryPolicy, when it has delays, replaces the machine's retry schedule (tests).
	RetryPolicy retry.Policy
}

// EnrichStats sums up a submit or poll run.
type EnrichStats struct {
	Jobs, Items, Polls, Succeeded, Failed, Expired, Labels, Skipped int
	// Adopted counts jobs whose token the provider already knew with other items (409) and
	// that named its job: that job is polled instead.
	Adopted    int
	CapReached []string
	// Refused are the providers that refused the token: nothing was changed for them.
	Refused []string
}

// ProviderRefusedError says a provider refused the bearer token (401): a configuration error
// of that provider. The run stopped using it at once and changed nothing of its jobs and posts:
// the next run with the right token goes on where this one stopped.
type ProviderRefusedError struct {
	Provider string
	Err      error
}

func (e *ProviderRefusedError) Error() string {
	return fmt.Sprintf("enrichment provider %s: %v: set SOCIAL_ENRICH_%s_TOKEN right; its jobs and posts are left as they were", e.Provider, e.Err, strings.ToUpper(e.Provider))
}

func (e *ProviderRefusedError) Unwrap() error { return e.Err }

// refused turns a refusal of the token into a *ProviderRefusedError, nil otherwise.
func refused(provider string, err error) error {
	if errors.Is(err, enrichapi.ErrUnauthorized) {
		return &ProviderRefusedError{Provider: provider, Err: err}
	}
	return nil
}

// eachProvider runs fn for every configured provider: a provider that refuses the token is
// left for the rest of the run and reported (its error joined into the result), the others go
// on.
func (e *Enricher) eachProvider(ctx context.Context, st *EnrichStats, fn func(ctx context.Context, p Provider) error) error {
	var refusals []error
	for _, p := range e.providers() {
		err := fn(ctx, p)
		var pr *ProviderRefusedError
		if errors.As(err, &pr) {
			e.Log.Error("the provider refuses its token: not used for the rest of the run, nothing changed", "provider", p.Name, "error", err)
			st.Refused = append(st.Refused, p.Name)
			refusals = append(refusals, pr)
			continue
		}
		if err != nil {
			return errors.Join(append(refusals, err)...)
		}
	}
	return errors.Join(refusals...)
}

func (e *Enricher) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Enricher) change(reason string) status.Change {
	return status.Change{Reason: reason, Actor: e.Actor, RunID: e.RunID, Attempt: true}
}

func (e *Enricher) providers() []Provider {
	var out []Provider
	for _, p := range Providers {
		if e.Clients[p.Name] != nil {
			out = append(out, p)
		}
	}
	return out
}

// inFlight counts a provider's unfinished jobs.
func (e *Enricher) inFlight(ctx context.Context, provider string) (int, error) {
	counts, err := Jobs.Counts(ctx, e.Pool)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range counts {
		if c.Scope == provider && (c.Status == JobNew || c.Status == JobRunning) {
			n += int(c.N)
		}
	}
	return n, nil
}

// Submit sends waiting posts to every configured provider in jobs of JobPosts posts, keeping
// at most Cap unfinished jobs per provider. A job is recorded with its idempotency token before
// it is sent, so a job whose sending was interrupted is sent again with the same token and the
// provider answers with the same job instead of running it twice.
func (e *Enricher) Submit(ctx context.Context) (EnrichStats, error) {
	var st EnrichStats
	err := e.eachProvider(ctx, &st, func(ctx context.Context, p Provider) error { return e.submitProvider(ctx, p, &st) })
	return st, err
}

func (e *Enricher) submitProvider(ctx context.Context, p Provider, st *EnrichStats) error {
	if err := e.recoverRefused(ctx, p); err != nil {
		return err
	}
	capN := orInt(e.Cap, DefaultJobCap)
	// Jobs recorded but not accepted yet (an interrupted submit, a cap reached): send them first.
	pending, err := Jobs.Pick(ctx, e.Pool, status.PickParams{Statuses: []status.Status{JobNew}, Limit: capN, ScopeValue: p.Name})
	if err != nil {
		return err
	}
	for _, id := range pending {
		if stop, err := e.send(ctx, p, id, st); err != nil || stop {
			return err
		}
	}
	n, err := e.inFlight(ctx, p.Name)
	if err != nil {
		return err
	}
	var after int64
	for n < capN {
		if err := ctx.Err(); err != nil {
			return err
		}
		ids, err := Enrichments.Pick(ctx, e.Pool, status.PickParams{Statuses: []status.Status{EnrichPending, EnrichRetry}, After: after,
			Limit: orInt(e.JobPosts, DefaultJobPosts), ScopeValue: p.Name, DueBy: e.now()})
		if err != nil || len(ids) == 0 {
			return err
		}
		after = ids[len(ids)-1]
		jobID, err := e.record(ctx, p, ids, st)
		if err != nil {
			return err
		}
		if jobID == 0 {
			continue // nothing to send in this batch
		}
		n++
		if stop, err := e.send(ctx, p, jobID, st); err != nil || stop {
			return err
		}
	}
	if n >= capN {
		st.CapReached = append(st.CapReached, p.Name)
		e.Log.Info("jobs in flight at the cap: the rest waits for the next run", "provider", p.Name, "cap", capN)
	}
	return nil
}

// refusedByEarlier matches the reason an earlier version gave the enrichments it failed when the
// provider refused its token (a 401 taken for a failure of each job and post).
const refusedByEarlier = "%enrichment API: HTTP 401 %"

// recoverRefused sends back to enrich_pending, with their retries cleared, the enrichments an
// earlier version failed because the provider refused its token: that was a configuration
// error, not theirs, and they are sent again under the token of this run.
func (e *Enricher) recoverRefused(ctx context.Context, p Provider) error {
	return pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM social_enrichments WHERE provider = $1 AND status = $2 AND last_error LIKE $3`,
			p.Name, string(EnrichFailed), refusedByEarlier)
		if err != nil {
			return fmt.Errorf("find enrichments failed on a refused token: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		c := e.change("failed by an earlier version when the provider refused its token: sent again")
		c.Attempt = false
		moved, err := Enrichments.MoveMany(ctx, tx, ids, EnrichFailed, EnrichPending, c)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE social_enrichments SET retries = 0, next_attempt_at = NULL WHERE id = ANY($1)`, moved); err != nil {
			return fmt.Errorf("clear the retries of enrichments failed on a refused token: %w", err)
		}
		e.Log.Warn("enrichments an earlier version failed on a refused token are sent again", "provider", p.Name, "posts", len(moved))
		return nil
	})
}

// enrichRow is one post's enrichment by one provider.
type enrichRow struct {
	ID, PostID int64
	Status     status.Status
}

func loadEnrichments(ctx context.Context, db status.DB, where string, arg any) ([]enrichRow, error) {
	rows, err := db.Query(ctx, `SELECT id, post_id, status FROM social_enrichments WHERE `+where+` ORDER BY id`, arg)
	if err != nil {
		return nil, fmt.Errorf("load enrichments: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (enrichRow, error) {
		var x enrichRow
		var s string
		err := r.Scan(&x.ID, &x.PostID, &s)
		x.Status = status.Status(s)
		return x, err
	})
}

// record turns waiting enrichments into a job: a post with nothing to send fails with the
// reason, the others are queued in a new job recorded with a fresh idempotency token, all in one
// transaction, so that a run killed here leaves the batch whole for the next one (and the jobs
// are the same batches whatever the kills).
func (e *Enricher) record(ctx context.Context, p Provider, ids []int64, st *EnrichStats) (int64, error) {
	rows, err := loadEnrichments(ctx, e.Pool, "id = ANY($1)", ids)
	if err != nil {
		return 0, err
	}
	var queue, empty []enrichRow
	var reasons []string
	var items []enrichapi.Item
	for _, r := range rows {
		if r.Status != EnrichPending && r.Status != EnrichRetry {
			continue
		}
		in, none, err := p.Inputs(ctx, e.Pool, r.PostID)
		if err != nil {
			return 0, err
		}
		if none != "" {
			empty, reasons = append(empty, r), append(reasons, none)
			continue
		}
		queue = append(queue, r)
		items = append(items, in...)
	}
	// What is sent under the token is stored with it, before it is sent: a resend carries
	// exactly this, whatever the posts became since (a new comment, a re-signed media URL).
	sub := enrichapi.Submission{IdempotencyToken: newToken(p.Name), Kind: p.Kind, Items: items}
	body, err := json.Marshal(sub)
	if err != nil {
		return 0, fmt.Errorf("a %s job: %w", p.Name, err)
	}
	var jobID int64
	err = pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		for i, r := range empty {
			if _, err := Enrichments.Fail(ctx, tx, r.ID, r.Status, status.Failure{Cause: reasons[i]}, e.change("")); err != nil {
				return err
			}
		}
		if len(queue) == 0 {
			return nil
		}
		if err := tx.QueryRow(ctx, `INSERT INTO social_enrich_jobs (provider, idempotency_token, items, status, submission) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
			p.Name, sub.IdempotencyToken, len(queue), string(JobNew), body).Scan(&jobID); err != nil {
			return fmt.Errorf("record a %s job: %w", p.Name, err)
		}
		for _, from := range []status.Status{EnrichPending, EnrichRetry} {
			ids := idsIn(queue, from)
			if len(ids) == 0 {
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE social_enrichments SET job_id = $2, submissions = submissions + 1 WHERE id = ANY($1)`, ids, jobID); err != nil {
				return fmt.Errorf("queue enrichments: %w", err)
			}
			c := e.change(fmt.Sprintf("in job %d", jobID))
			c.Attempt = false
			if _, err := Enrichments.MoveMany(ctx, tx, ids, from, EnrichQueued, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		st.Skipped += len(empty)
	}
	return jobID, err
}

// requeue ends job jobID (from -> to, for jobReason) and returns its queued posts to pending
// (for postReason), in one transaction: they go out again in a new job, without a retry used.
func (e *Enricher) requeue(ctx context.Context, jobID int64, from, to status.Status, rows []enrichRow, jobReason, postReason string) error {
	return pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		if _, err := Jobs.Move(ctx, tx, jobID, from, to, e.change(jobReason)); err != nil {
			return err
		}
		_, err := Enrichments.MoveMany(ctx, tx, idsIn(rows, EnrichQueued), EnrichQueued, EnrichPending, e.change(postReason))
		return err
	})
}

// idsIn lists the ids of the rows in status s.
func idsIn(rows []enrichRow, s status.Status) []int64 {
	var ids []int64
	for _, r := range rows {
		if r.Status == s {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func newToken(provider string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "ingest-" + provider + "-" + hex.EncodeToString(b)
}

// send submits a recorded job, exactly as recorded; stop says the provider takes no more now.
func (e *Enricher) send(ctx context.Context, p Provider, jobID int64, st *EnrichStats) (bool, error) {
	var token string
	var body []byte
	if err := e.Pool.QueryRow(ctx, `SELECT idempotency_token, submission FROM social_enrich_jobs WHERE id = $1`, jobID).Scan(&token, &body); err != nil {
		return false, fmt.Errorf("job %d: %w", jobID, err)
	}
	rows, err := loadEnrichments(ctx, e.Pool, "job_id = $1", jobID)
	if err != nil {
		return false, err
	}
	sub := enrichapi.Submission{IdempotencyToken: token, Kind: p.Kind}
	if body != nil {
		if err := json.Unmarshal(body, &sub); err != nil {
			return false, fmt.Errorf("job %d: its stored submission: %w", jobID, err)
		}
	} else {
		// A job recorded by an earlier version, which stored no submission: rebuilt from the
		// posts; if they changed, the provider answers 409 and the job is adopted or redone.
		for _, r := range rows {
			if r.Status != EnrichQueued {
				continue
			}
			in, _, err := p.Inputs(ctx, e.Pool, r.PostID)
			if err != nil {
				return false, err
			}
			sub.Items = append(sub.Items, in...)
		}
	}
	log := e.Log.With("provider", p.Name, "job", jobID)
	job, err := e.Clients[p.Name].Submit(ctx, sub)
	var mismatch *enrichapi.MismatchError
	switch {
	case refused(p.Name, err) != nil:
		return true, refused(p.Name, err)
	case errors.Is(err, enrichapi.ErrCapReached):
		log.Info("the provider's cap on jobs in flight is reached: the job is sent again by the next run")
		st.CapReached = append(st.CapReached, p.Name)
		return true, nil
	case err != nil && ctx.Err() != nil:
		return true, ctx.Err()
	case errors.As(err, &mismatch) && mismatch.JobID != "":
		// The provider holds a job under this token with other items, and names it: that job is
		// the one polled; posts it has no result for are retried.
		log.Warn("the provider knows this token with other items: its job is adopted", "external_id", mismatch.JobID)
		job = enrichapi.Job{ID: mismatch.JobID}
		st.Adopted++
	case errors.As(err, &mismatch):
		// The provider holds a job under this token with other items and does not name it: the
		// posts are sent again in a new job, under a new token, without a retry used.
		log.Warn("the provider knows this token with other items: its posts are sent again in a new job", "error", err)
		return false, e.requeue(ctx, jobID, JobNew, JobFailed, rows, err.Error()+": its posts are sent again in a new job",
			fmt.Sprintf("job %d: idempotency mismatch: sent again", jobID))
	case err != nil && enrichapi.IsRetryable(err):
		log.Warn("job not sent: sent again by the next run, with the same idempotency token and items", "error", err)
		return true, nil
	case err != nil:
		log.Warn("job refused", "error", err)
		return false, pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
			if _, err := Jobs.Move(ctx, tx, jobID, JobNew, JobFailed, e.change(err.Error())); err != nil {
				return err
			}
			return e.failItems(ctx, tx, rows, err.Error(), false)
		})
	}
	c := e.change("")
	c.Due = e.now().Add(orDuration(e.PollMin, DefaultPollMin))
	err = pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE social_enrich_jobs SET external_id = $2, submitted_at = coalesce(submitted_at, now()), results_expire_at = coalesce($3, results_expire_at) WHERE id = $1`,
			jobID, job.ID, job.ResultsExpireAt); err != nil {
			return fmt.Errorf("job %d: %w", jobID, err)
		}
		_, err := Jobs.Move(ctx, tx, jobID, JobNew, JobRunning, c)
		return err
	})
	if err == nil {
		st.Jobs++
		st.Items += len(sub.Items)
		log.Info("job submitted", "external_id", job.ID, "posts", len(rows), "items", len(sub.Items))
	}
	return false, err
}

// failItems records a failed attempt at each queued enrichment of a job.
func (e *Enricher) failItems(ctx context.Context, tx pgx.Tx, rows []enrichRow, cause string, retryable bool) error {
	for _, r := range rows {
		if _, err := Enrichments.Fail(ctx, tx, r.ID, EnrichQueued, status.Failure{Cause: cause, Retryable: retryable, Policy: e.RetryPolicy, Now: e.now()}, e.change("")); err != nil {
			return err
		}
	}
	return nil
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
