package habr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/fetch"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/pgtext"
	"github.com/ingest-dev/ingest/internal/status"
)

// Extraction rules fixed in code (seed 004 §6): `ingest extract habr` takes no parameters.
const (
	// BatchSize is how many publications are fetched, one after another, between two pauses.
	BatchSize = 10
	// BatchPause is the pause between batches, to spare the source. A page takes 0.3-1 s to
	// arrive from Habr, so a batch plus its pause averages about one request per second, the
	// rate research/habr.md §4 recommends; even a source answering instantly gets at most two.
	BatchPause = 5 * time.Second
	// CacheTTL is how long fetched HTML is reused: long enough that a rerun after a crash or a
	// manual status fix re-extracts without refetching, short enough that the cache stays a
	// cache (HTML is never the canonical artifact).
	CacheTTL = 24 * time.Hour
)

// entity labels the Habr pipeline's metrics.
const entity = "habr_publications"

// Extraction takes pending publications, then failed ones whose next attempt is due, strictly in
// id order, one at a time, and stores their Markdown. The zero value of Pause and CacheTTL means
// the constants above.
type Extraction struct {
	Pool      *pgxpool.Pool
	Fetcher   Fetcher
	Extractor *Extractor
	Log       *slog.Logger
	Metrics   *metrics.Metrics
	// Actor and RunID identify the run in the status history.
	Actor string
	RunID int64
	// Pause overrides BatchPause (tests and benchmarks only; negative means none).
	Pause time.Duration
	// CacheTTL overrides the package's CacheTTL (tests only).
	CacheTTL time.Duration
	// Now is the clock for retry scheduling; nil means time.Now (tests move it forward).
	Now func() time.Time
}

// ExtractStats sums up an extraction run.
type ExtractStats struct {
	Backlog                           int64 // publications waiting (pending, or failed and due) when the run started
	Done                              int
	Extracted, Failed, Broken, Cached int
	// Unfinished counts the attempts of earlier runs that never finished (their process died),
	// each recorded as a failed attempt when this run started.
	Unfinished int
}

// phases are what a run picks, in order: publications never tried, then failed ones whose next
// attempt is due. New publications come first so that pages that keep failing never hold them up.
var phases = [][]status.Status{{Pending}, {Failed}}

// Run extracts until no pending publication, and no failed one whose retry is due, with a higher
// id than the last one seen in its phase is left. Each publication's result is committed on its
// own; a stop (ctx cancelled) between two publications leaves the rest untouched for the next run.
func (e *Extraction) Run(ctx context.Context) (ExtractStats, error) {
	var st ExtractStats
	if n, err := purgeExpiredPages(ctx, e.Pool); err != nil {
		return st, err
	} else if n > 0 {
		e.Log.Info("expired html purged from cache", "pages", n)
	}
	if err := e.recoverUnfinished(ctx, &st); err != nil {
		return st, err
	}
	now := e.now()
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM habr_publications WHERE status = $1`, string(Pending)).Scan(&st.Backlog); err != nil {
		return st, fmt.Errorf("count backlog: %w", err)
	}
	due, err := Machine.DueCount(ctx, e.Pool, "", now)
	if err != nil {
		return st, err
	}
	st.Backlog += due
	e.Log.Info("extraction started", "backlog", st.Backlog, "batch_size", BatchSize, "pause_s", e.pause().Seconds())
	start := time.Now()
	batch, paused := 0, time.Duration(0)
	for _, statuses := range phases {
		var after int64
		for {
			ids, err := Machine.Pick(ctx, e.Pool, status.PickParams{Statuses: statuses, After: after, Limit: BatchSize, DueBy: now})
			if err != nil {
				return st, err
			}
			if len(ids) == 0 {
				break
			}
			if batch > 0 {
				if err := sleep(ctx, e.pause()); err != nil {
					return st, err
				}
				paused += e.pause()
			}
			batch++
			pubs, err := loadPublications(ctx, e.Pool, ids)
			if err != nil {
				return st, err
			}
			for _, p := range pubs {
				if err := ctx.Err(); err != nil {
					return st, err
				}
				if err := e.one(ctx, p, &st); err != nil {
					return st, err
				}
			}
			after = ids[len(ids)-1]
			e.logProgress(batch, st, time.Since(start), paused)
			if len(ids) < BatchSize {
				break
			}
		}
	}
	if next, ok, err := Machine.NextDue(ctx, e.Pool, ""); err != nil {
		return st, err
	} else if ok {
		e.Log.Info("failed publications wait for their next attempt", "next_due", next.UTC().Format(time.RFC3339))
	}
	return st, nil
}

// recoverUnfinished records every attempt that an earlier run started and never finished as a
// failed attempt (status.Machine.FailUnfinished): its process died on the page (killed, out of
// memory, node lost). Counting them is what lets a page that kills the process every time be
// given up on, rather than block every later run.
func (e *Extraction) recoverUnfinished(ctx context.Context, st *ExtractStats) error {
	unfinished, err := Machine.FailUnfinished(ctx, e.Pool, status.UnfinishedParams{Statuses: []status.Status{Pending, Failed}, Now: e.now()},
		status.Change{Actor: e.Actor, RunID: e.RunID})
	if err != nil {
		return err
	}
	for _, u := range unfinished {
		e.Log.Warn("attempt of an earlier run never finished", "publication_id", u.ID, "started_at", u.StartedAt, "run_id", u.RunID, "status", u.To)
		e.counted(u.Outcome, st)
		st.Unfinished++
	}
	return nil
}

// one handles one publication. It returns an error only when the run must stop (database
// failure or ctx ending); every outcome of the publication itself is recorded as its status.
func (e *Extraction) one(ctx context.Context, p Publication, st *ExtractStats) error {
	log := e.Log.With("publication_id", p.ID, "url", p.URL)
	recorded := false
	defer func() {
		if !recorded && ctx.Err() != nil {
			e.abandonAttempt(ctx, p.ID, log)
		}
	}()
	started, err := Machine.StartAttempt(ctx, e.Pool, p.ID, p.Status, e.RunID)
	if err != nil || !started {
		return err // a database failure or a stop, or the publication moved since it was picked
	}
	if p.Status == Failed {
		e.Metrics.RetryAttempts.WithLabelValues(entity).Inc()
	}
	page, fromCache, pageCleaned, err := e.page(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: the publication keeps its status for the next run
		}
		if !fetch.IsNetwork(err) && !errors.Is(err, fetch.ErrOffOrigin) {
			return err // the database failed, not the page
		}
		// A page over the size cap or off Habr cannot get better by retrying.
		retryable := !errors.Is(err, fetch.ErrOffOrigin) && !errors.Is(err, fetch.ErrTooLarge)
		out, ferr := e.recordFailure(ctx, p.ID, p.Status, networkReason(err), retryable, st)
		if ferr != nil {
			return ferr
		}
		recorded = true
		st.Done++
		log.Warn("publication not fetched", "status", out.To, "retries", out.Retries, "next_attempt_at", out.NextAttemptAt, "error", err)
		return nil
	}
	if fromCache {
		st.Cached++
	}
	var cleaned []pgtext.Change
	if pageCleaned != (pgtext.Change{}) {
		cleaned = append(cleaned, pageCleaned)
	}
	art, err := e.Extractor.Extract(p.URL, []byte(page))
	if err != nil {
		e.noteCleaned(log, cleaned)
		log.Warn("publication broken: no complete article body", "status", Broken, "from_cache", fromCache, "error", err)
		if _, err := e.recordFailure(ctx, p.ID, p.Status, err.Error(), false, st); err != nil {
			return err
		}
		recorded = true
		st.Done++
		return nil
	}
	e.noteCleaned(log, append(cleaned, cleanArticle(&art)...))
	moved, err := saveExtracted(ctx, e.Pool, p, art, status.Change{Actor: e.Actor, RunID: e.RunID, Attempt: true})
	if err != nil {
		return err
	}
	recorded = true
	st.Done++
	if moved {
		st.Extracted++
		e.Metrics.RecordsExtracted.WithLabelValues(entity).Inc()
		e.Metrics.ImportOK.WithLabelValues(entity).Inc()
		e.Metrics.Processed.WithLabelValues(entity, string(Extracted)).Inc()
		log.Debug("publication extracted", "from_cache", fromCache, "markdown_bytes", len(art.Markdown))
	}
	return nil
}

// abandonAttempt clears the attempt of a run that is stopping (SIGINT, SIGTERM) before recording
// an outcome: a stop is not the page's fault.
func (e *Extraction) abandonAttempt(ctx context.Context, id int64, log *slog.Logger) {
	if err := Machine.AbandonAttempts(ctx, e.Pool, []int64{id}); err != nil {
		log.Warn("attempt left open after the stop; the next run counts it", "error", err)
	}
}

// page returns the publication's HTML from the cache when it is within its TTL, otherwise from
// Habr, caching what arrives, and what cleanPage replaced in it.
func (e *Extraction) page(ctx context.Context, p Publication) (string, bool, pgtext.Change, error) {
	body, ok, err := cachedPage(ctx, e.Pool, p.URL)
	if err != nil || ok {
		return body, ok, pgtext.Change{}, err
	}
	resp, err := e.Fetcher.Get(ctx, p.URL)
	if err != nil {
		return "", false, pgtext.Change{}, err
	}
	// Cleaned before it is cached: the cache stores text, which refuses a NUL or invalid UTF-8.
	page, cleaned := cleanPage(resp.Body)
	ttl := e.CacheTTL
	if ttl == 0 {
		ttl = CacheTTL
	}
	if err := cachePage(ctx, e.Pool, p.URL, resp.ContentType, page, ttl); err != nil {
		return "", false, pgtext.Change{}, err
	}
	return page, false, cleaned, nil
}

// recordFailure records a failed attempt through the machine's retry schedule: a retryable one
// waits in extract_failed for its next attempt, until the retries are used up; any other goes
// to extract_broken at once.
func (e *Extraction) recordFailure(ctx context.Context, id int64, from status.Status, cause string, retryable bool, st *ExtractStats) (status.Outcome, error) {
	out, err := Machine.Fail(ctx, e.Pool, id, from, status.Failure{Cause: cause, Retryable: retryable, Now: e.now()},
		status.Change{Actor: e.Actor, RunID: e.RunID})
	if err != nil || !out.Moved {
		return out, err
	}
	e.counted(out, st)
	return out, nil
}

// counted counts a failed attempt in the run's stats and metrics.
func (e *Extraction) counted(out status.Outcome, st *ExtractStats) {
	e.Metrics.Processed.WithLabelValues(entity, string(out.To)).Inc()
	if out.To == Broken {
		st.Broken++
		e.Metrics.ImportErr.WithLabelValues(entity).Inc()
	} else {
		st.Failed++
	}
}

func (e *Extraction) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// networkReason is the stored reason of a network-class failure: short and free of the URL, so
// `ingest status habr` can group publications by it.
func networkReason(err error) string {
	var se *fetch.StatusError
	switch {
	case errors.As(err, &se) && se.Location != "":
		return fmt.Sprintf("HTTP %d %s (redirect to %s)", se.Code, http.StatusText(se.Code), se.Location)
	case errors.As(err, &se):
		return fmt.Sprintf("HTTP %d %s", se.Code, http.StatusText(se.Code))
	case errors.Is(err, fetch.ErrTimeout):
		return "timed out"
	case errors.Is(err, fetch.ErrTruncated):
		return "truncated body"
	case errors.Is(err, fetch.ErrTooLarge):
		// The fetcher's message carries the size ("Content-Length N is over M bytes", or
		// "over M bytes" for a body without a length).
		msg := err.Error()
		if i := strings.Index(msg, fetch.ErrTooLarge.Error()); i >= 0 {
			msg = msg[i+len(fetch.ErrTooLarge.Error()):]
		}
		return "page over the size cap" + msg
	case errors.Is(err, fetch.ErrOffOrigin):
		return "link is not on habr.com"
	case errors.Is(err, fetch.ErrConnection):
		return "connection failed: " + innermost(err).Error()
	}
	return err.Error()
}

func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func (e *Extraction) pause() time.Duration {
	switch {
	case e.Pause < 0:
		return 0
	case e.Pause > 0:
		return e.Pause
	}
	return BatchPause
}

// logProgress logs one line per batch. The ETA counts the work per record so far and the pauses
// still to come between the batches left, which on a small backlog are most of the time.
func (e *Extraction) logProgress(batch int, st ExtractStats, took, paused time.Duration) {
	rate := float64(st.Done) / took.Seconds()
	attrs := []any{"batch", batch, "done", st.Done, "total", st.Backlog, "extracted", st.Extracted,
		"failed", st.Failed, "broken", st.Broken, "from_cache", st.Cached, "rate_per_s", round2(rate)}
	if left := st.Backlog - int64(st.Done); left > 0 && st.Done > 0 {
		perRecord := (took - paused).Seconds() / float64(st.Done)
		batches := (left + BatchSize - 1) / BatchSize
		attrs = append(attrs, "eta_s", round2(float64(left)*perRecord+float64(batches)*e.pause().Seconds()))
	}
	e.Log.Info("batch done", attrs...)
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
