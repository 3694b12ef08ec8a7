package habr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/fetch"
	"github.com/ingest-dev/ingest/internal/metrics"
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

// Extraction takes pending and failed publications, strictly in id order, one at a time, and
// stores their Markdown. The zero value of Pause and CacheTTL means the constants above.
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
}

// ExtractStats sums up an extraction run.
type ExtractStats struct {
	Backlog                           int64 // publications waiting when the run started
	Done                              int
	Extracted, Failed, Broken, Cached int
}

// picked are the statuses extraction takes: never extracted or broken ones (seed 004 §5).
var picked = []status.Status{Pending, Failed}

// Run extracts until no pending or failed publication with a higher id than the last one seen
// is left. Each publication's result is committed on its own; a stop (ctx cancelled) between
// two publications leaves the rest untouched for the next run.
func (e *Extraction) Run(ctx context.Context) (ExtractStats, error) {
	var st ExtractStats
	if n, err := purgeExpiredPages(ctx, e.Pool); err != nil {
		return st, err
	} else if n > 0 {
		e.Log.Info("expired html purged from cache", "pages", n)
	}
	if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM habr_publications WHERE status = ANY($1)`,
		[]string{string(Pending), string(Failed)}).Scan(&st.Backlog); err != nil {
		return st, fmt.Errorf("count backlog: %w", err)
	}
	e.Log.Info("extraction started", "backlog", st.Backlog, "batch_size", BatchSize, "pause_s", e.pause().Seconds())
	start := time.Now()
	var after int64
	for batch := 1; ; batch++ {
		ids, err := Machine.Pick(ctx, e.Pool, status.PickParams{Statuses: picked, After: after, Limit: BatchSize})
		if err != nil {
			return st, err
		}
		if len(ids) == 0 {
			break
		}
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
		e.logProgress(batch, st, time.Since(start))
		if len(ids) < BatchSize {
			break
		}
		if err := sleep(ctx, e.pause()); err != nil {
			return st, err
		}
	}
	return st, nil
}

// one handles one publication. It returns an error only when the run must stop (database
// failure or ctx ending); every outcome of the publication itself is recorded as its status.
func (e *Extraction) one(ctx context.Context, p Publication, st *ExtractStats) error {
	log := e.Log.With("publication_id", p.ID, "url", p.URL)
	if p.Status == Failed {
		e.Metrics.RetryAttempts.WithLabelValues(entity).Inc()
	}
	page, fromCache, err := e.page(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: the publication keeps its status for the next run
		}
		if !fetch.IsNetwork(err) && !errors.Is(err, fetch.ErrOffOrigin) {
			return err // the database failed, not the page
		}
		// An off-Habr link cannot get better by retrying: it is broken, for a person to look at.
		to := Failed
		if errors.Is(err, fetch.ErrOffOrigin) {
			to = Broken
		}
		log.Warn("publication not fetched", "status", to, "error", err)
		return e.fail(ctx, p, to, networkReason(err), st)
	}
	if fromCache {
		st.Cached++
	}
	art, err := e.Extractor.Extract(p.URL, []byte(page))
	if err != nil {
		log.Warn("publication broken: no complete article body", "status", Broken, "from_cache", fromCache, "error", err)
		return e.fail(ctx, p, Broken, err.Error(), st)
	}
	moved, err := saveExtracted(ctx, e.Pool, p, art, status.Change{Actor: e.Actor, RunID: e.RunID, Attempt: true})
	if err != nil {
		return err
	}
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

// page returns the publication's HTML from the cache when it is within its TTL, otherwise from
// Habr, caching what arrives.
func (e *Extraction) page(ctx context.Context, p Publication) (string, bool, error) {
	body, ok, err := cachedPage(ctx, e.Pool, p.URL)
	if err != nil || ok {
		return body, ok, err
	}
	resp, err := e.Fetcher.Get(ctx, p.URL)
	if err != nil {
		return "", false, err
	}
	ttl := e.CacheTTL
	if ttl == 0 {
		ttl = CacheTTL
	}
	if err := cachePage(ctx, e.Pool, p.URL, resp.ContentType, string(resp.Body), ttl); err != nil {
		return "", false, err
	}
	return string(resp.Body), false, nil
}

func (e *Extraction) fail(ctx context.Context, p Publication, to status.Status, reason string, st *ExtractStats) error {
	moved, err := Machine.Move(ctx, e.Pool, p.ID, p.Status, to, status.Change{Reason: reason, Actor: e.Actor, RunID: e.RunID, Attempt: true})
	if err != nil {
		return err
	}
	st.Done++
	if !moved {
		return nil
	}
	e.Metrics.Processed.WithLabelValues(entity, string(to)).Inc()
	if to == Broken {
		st.Broken++
		e.Metrics.ImportErr.WithLabelValues(entity).Inc()
	} else {
		st.Failed++
	}
	return nil
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
		return "body over the size cap"
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

func (e *Extraction) logProgress(batch int, st ExtractStats, took time.Duration) {
	rate := float64(st.Done) / took.Seconds()
	attrs := []any{"batch", batch, "done", st.Done, "total", st.Backlog, "extracted", st.Extracted,
		"failed", st.Failed, "broken", st.Broken, "from_cache", st.Cached, "rate_per_s", round2(rate)}
	if left := st.Backlog - int64(st.Done); left > 0 && rate > 0 {
		attrs = append(attrs, "eta_s", round2(float64(left)/rate))
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
