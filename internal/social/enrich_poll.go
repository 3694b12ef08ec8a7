package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/social/enrichapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// Poll asks every configured provider about its jobs that are due a poll: unfinished ones
// are polled again later, the wait doubling from PollMin to PollMax; finished ones have their
// results read page by page into the raw store and their labels normalized; failed ones send
// their posts back on the retry schedule; a job whose results expired before they were read is
// marked so and its posts are queued again, to be resubmitted.
func (e *Enricher) Poll(ctx context.Context) (EnrichStats, error) {
	var st EnrichStats
	err := e.eachProvider(ctx, &st, func(ctx context.Context, p Provider) error {
		var after int64
		for {
			ids, err := Jobs.Pick(ctx, e.Pool, status.PickParams{Statuses: []status.Status{JobRunning}, After: after, Limit: 100,
				ScopeValue: p.Name, DueBy: e.now()})
			if err != nil || len(ids) == 0 {
				return err
			}
			for _, id := range ids {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := e.pollOne(ctx, p, id, &st); err != nil {
					return err
				}
			}
			after = ids[len(ids)-1]
		}
	})
	return st, err
}

func (e *Enricher) pollOne(ctx context.Context, p Provider, jobID int64, st *EnrichStats) error {
	var external string
	var attempts int
	var expires *time.Time
	if err := e.Pool.QueryRow(ctx, `SELECT coalesce(external_id, ''), attempts, results_expire_at FROM social_enrich_jobs WHERE id = $1`, jobID).
		Scan(&external, &attempts, &expires); err != nil {
		return fmt.Errorf("job %d: %w", jobID, err)
	}
	log := e.Log.With("provider", p.Name, "job", jobID, "external_id", external)
	st.Polls++
	if expires != nil && !e.now().Before(*expires) {
		return e.expired(ctx, jobID, "its results expired at "+expires.UTC().Format(time.RFC3339)+" before they were read", st)
	}
	client := e.Clients[p.Name]
	job, err := client.Status(ctx, external)
	if rerr := refused(p.Name, err); rerr != nil {
		return rerr
	}
	if err == nil && job.ResultsExpireAt != nil && (expires == nil || !expires.Equal(*job.ResultsExpireAt)) {
		// Kept from the first answer that gives it: a job whose results would expire before the
		// next poll reads them is known to be lost, and resubmitted.
		if _, err := e.Pool.Exec(ctx, `UPDATE social_enrich_jobs SET results_expire_at = $2 WHERE id = $1`, jobID, job.ResultsExpireAt); err != nil {
			return fmt.Errorf("job %d: %w", jobID, err)
		}
	}
	switch {
	case errors.Is(err, enrichapi.ErrExpired):
		return e.expired(ctx, jobID, err.Error(), st)
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && enrichapi.IsRetryable(err):
		log.Warn("poll failed: polled again later", "error", err)
		return e.later(ctx, jobID, attempts, err.Error(), nil)
	case err != nil:
		return e.jobFailed(ctx, jobID, err.Error(), st)
	}
	switch job.Status {
	case enrichapi.Queued, enrichapi.Running:
		return e.later(ctx, jobID, attempts, "", job.ResultsExpireAt)
	case enrichapi.Failed:
		reason := "the provider failed the job"
		if job.Error != nil {
			reason += ": " + job.Error.Code + ": " + job.Error.Message
		}
		log.Warn("job failed", "reason", reason)
		return e.jobFailed(ctx, jobID, reason, st)
	case enrichapi.Succeeded:
		return e.collect(ctx, p, jobID, external, st)
	}
	return e.later(ctx, jobID, attempts, fmt.Sprintf("unknown job status %q", job.Status), job.ResultsExpireAt)
}

// later schedules the next poll, the wait doubling with every poll.
func (e *Enricher) later(ctx context.Context, jobID int64, attempts int, reason string, expires *time.Time) error {
	wait := orDuration(e.PollMin, DefaultPollMin) << min(attempts, 16)
	c := e.change(reason)
	c.Due = e.now().Add(min(wait, orDuration(e.PollMax, DefaultPollMax)))
	return pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		if expires != nil {
			if _, err := tx.Exec(ctx, `UPDATE social_enrich_jobs SET results_expire_at = $2 WHERE id = $1`, jobID, expires); err != nil {
				return fmt.Errorf("job %d: %w", jobID, err)
			}
		}
		_, err := Jobs.Move(ctx, tx, jobID, JobRunning, JobRunning, c)
		return err
	})
}

func (e *Enricher) jobFailed(ctx context.Context, jobID int64, reason string, st *EnrichStats) error {
	rows, err := loadEnrichments(ctx, e.Pool, "job_id = $1", jobID)
	if err != nil {
		return err
	}
	st.Failed++
	return pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		if _, err := Jobs.Move(ctx, tx, jobID, JobRunning, JobFailed, e.change(reason)); err != nil {
			return err
		}
		var queued []enrichRow
		for _, r := range rows {
			if r.Status == EnrichQueued {
				queued = append(queued, r)
			}
		}
		return e.failItems(ctx, tx, queued, "job "+fmt.Sprint(jobID)+": "+reason, true)
	})
}

// expired marks a job whose results are gone and queues its posts again.
func (e *Enricher) expired(ctx context.Context, jobID int64, reason string, st *EnrichStats) error {
	rows, err := loadEnrichments(ctx, e.Pool, "job_id = $1", jobID)
	if err != nil {
		return err
	}
	st.Expired++
	e.Log.Warn("job results expired before they were read: its posts are submitted again", "job", jobID, "reason", reason)
	return e.requeue(ctx, jobID, JobRunning, JobExpired, rows, reason, fmt.Sprintf("job %d expired: resubmitted", jobID))
}

// collect reads a succeeded job's results and stores them: each page in the raw store as it
// is read, committed with the token of the next one, so that a failure on a later page (a 5xx,
// a kill) does not read the earlier ones again; then, once the last page is in, the normalized
// labels and each post's outcome, in one transaction.
func (e *Enricher) collect(ctx context.Context, p Provider, jobID int64, external string, st *EnrichStats) error {
	client := e.Clients[p.Name]
	var token *string
	if err := e.Pool.QueryRow(ctx, `SELECT results_next FROM social_enrich_jobs WHERE id = $1`, jobID).Scan(&token); err != nil {
		return fmt.Errorf("job %d: %w", jobID, err)
	}
	next := deref(token)
	for token == nil || next != "" {
		rp, raw, err := client.Results(ctx, external, next)
		if rerr := refused(p.Name, err); rerr != nil {
			return rerr
		}
		switch {
		case errors.Is(err, enrichapi.ErrExpired):
			return e.expired(ctx, jobID, err.Error(), st)
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			e.Log.Warn("results page not read: the job is read on from it later", "provider", p.Name, "job", jobID, "page_token", next, "error", err)
			return e.later(ctx, jobID, 0, err.Error(), nil)
		}
		following := rp.NextPageToken
		if following == next {
			following = "" // a page naming itself next would loop
		}
		err = pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
			if _, _, err := insertRaw(ctx, tx, rawPage{Endpoint: "enrich:" + p.Name, Request: "jobs/" + external + "/results?page_token=" + next,
				Cursor: next, NextCursor: following, HasNext: following != "", Items: len(rp.Results), RunID: e.RunID, JobID: jobID, Body: raw}); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE social_enrich_jobs SET results_next = $2, results_read = results_read + 1 WHERE id = $1`, jobID, following)
			return err
		})
		if err != nil {
			return fmt.Errorf("store a results page of job %d: %w", jobID, err)
		}
		token, next = &following, following
	}
	return e.store(ctx, p, jobID, st)
}

// store normalizes the results pages of a job, as read into the raw store, into labels, and
// moves its posts and the job, in one transaction.
func (e *Enricher) store(ctx context.Context, p Provider, jobID int64, st *EnrichStats) error {
	// One body per page token: a page read twice (a kill between its commit and the next) is
	// taken once, as last read.
	bodies, err := collectRows(ctx, e.Pool, `SELECT DISTINCT ON (cursor) body FROM social_raw_pages WHERE job_id = $1 AND endpoint = $2 ORDER BY cursor, id DESC`,
		jobID, "enrich:"+p.Name)
	if err != nil {
		return fmt.Errorf("results of job %d: %w", jobID, err)
	}
	var results []enrichapi.Result
	for _, b := range bodies {
		var rp enrichapi.ResultsPage
		if err := json.Unmarshal(b, &rp); err != nil {
			return fmt.Errorf("results of job %d: a stored page: %w", jobID, err)
		}
		results = append(results, rp.Results...)
	}
	rows, err := loadEnrichments(ctx, e.Pool, "job_id = $1", jobID)
	if err != nil {
		return err
	}
	type outcome struct {
		got  bool
		errs []string
	}
	byPost := map[int64]*outcome{}
	labels := 0
	err = pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range rows {
			if r.Status == EnrichQueued {
				byPost[r.PostID] = &outcome{}
				b.Queue(`DELETE FROM social_labels WHERE post_id = $1 AND provider = $2`, r.PostID, p.Name)
			}
		}
		for _, res := range results {
			postID, subject, err := parseRef(res.Ref)
			o := byPost[postID]
			if err != nil || o == nil {
				continue // not one of this job's posts
			}
			if res.Error != "" {
				o.errs = append(o.errs, subject+": "+res.Error)
				continue
			}
			o.got = true
			for _, l := range res.Labels {
				b.Queue(`INSERT INTO social_labels (post_id, provider, subject, label, confidence, job_id) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (post_id, provider, subject, label) DO UPDATE SET confidence = EXCLUDED.confidence, job_id = EXCLUDED.job_id`,
					postID, p.Name, subject, l.Name, l.Confidence, jobID)
				labels++
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("store the labels of job %d: %w", jobID, err)
		}
		for _, r := range rows {
			o := byPost[r.PostID]
			if o == nil {
				continue
			}
			var err error
			switch {
			case o.got:
				_, err = Enrichments.Move(ctx, tx, r.ID, EnrichQueued, Enriched, e.change(""))
			case len(o.errs) > 0:
				_, err = Enrichments.Fail(ctx, tx, r.ID, EnrichQueued, status.Failure{Cause: fmt.Sprint(o.errs)}, e.change(""))
			default:
				_, err = Enrichments.Fail(ctx, tx, r.ID, EnrichQueued, status.Failure{Cause: "the provider returned no result for it",
					Retryable: true, Policy: e.RetryPolicy, Now: e.now()}, e.change(""))
			}
			if err != nil {
				return err
			}
		}
		_, err := Jobs.Move(ctx, tx, jobID, JobRunning, JobSucceeded, e.change(""))
		return err
	})
	if err == nil {
		st.Succeeded++
		st.Labels += labels
	}
	return err
}

// collectRows reads one bytea/jsonb column of every row of q.
func collectRows(ctx context.Context, db status.DB, q string, args ...any) ([][]byte, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[[]byte])
}
