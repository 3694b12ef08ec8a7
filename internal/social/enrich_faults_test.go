package social_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/enrichfake"
	"github.com/ingest-dev/ingest/internal/social"
)

// untilDone submits and polls until every enrichment is enriched or failed.
func untilDone(t *testing.T, e *env, en *social.Enricher, clk *clock) {
	t.Helper()
	for range 200 {
		if _, err := en.Submit(e.ctx); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Second)
		if _, err := en.Poll(e.ctx); err != nil {
			t.Fatal(err)
		}
		if e.count(`SELECT count(*) FROM social_enrichments WHERE status <> ALL($1)`, []string{string(social.Enriched), string(social.EnrichFailed)}) == 0 {
			return
		}
	}
	t.Fatalf("%d enrichments unfinished", e.count(`SELECT count(*) FROM social_enrichments WHERE status <> ALL($1)`, []string{string(social.Enriched), string(social.EnrichFailed)}))
}

// killAfterAccepted puts the first text job back where a submit killed after the provider
// accepted it leaves it: recorded, not known to be accepted.
func killAfterAccepted(t *testing.T, e *env) int64 {
	t.Helper()
	var id int64
	if err := e.pool.QueryRow(e.ctx, `UPDATE social_enrich_jobs SET status = $1, external_id = NULL, submitted_at = NULL
WHERE id = (SELECT min(id) FROM social_enrich_jobs WHERE provider = 'text') RETURNING id`, string(social.JobNew)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// Then a sync stores one more comment on one of its posts: its text inputs change.
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO social_comments (ig_comment_id, post_id, text, posted_at, posted_raw, source_raw_id)
SELECT '99999999999', post_id, 'one more, newest of all', now(), '2026-11-27T10:00:00+0000', 0 FROM social_enrichments WHERE job_id = $1 LIMIT 1`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestEnrichResendIsWhatWasFirstSent(t *testing.T) {
	t.Parallel()
	e, en, prov, clk := enrichEnv(t, enrichfake.Options{Cap: 50, RunFor: time.Second})
	en.Cap = 50
	if _, err := en.Submit(e.ctx); err != nil {
		t.Fatal(err)
	}
	killAfterAccepted(t, e)
	if _, err := en.Submit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if s := prov.Stats(); s.Duplicates != 1 || s.Mismatches != 0 {
		t.Errorf("resend: %d duplicates, %d mismatches; want the same job back, no 409", s.Duplicates, s.Mismatches)
	}
	untilDone(t, e, en, clk)
	if n := e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1 AND provider = 'text'`, string(social.EnrichFailed)); n != 0 {
		t.Errorf("%d text enrichments failed, want none", n)
	}
	if n := e.count(`SELECT count(*) FROM social_enrich_jobs WHERE results_expire_at IS NULL AND status = $1`, string(social.JobSucceeded)); n != 0 {
		t.Errorf("%d succeeded jobs without results_expire_at", n)
	}
}

func TestEnrichMismatchIsAdoptedOrRedone(t *testing.T) {
	t.Parallel()
	for _, hide := range []bool{false, true} {
		e, en, prov, clk := enrichEnv(t, enrichfake.Options{Cap: 50, RunFor: time.Second, HideJobOnMismatch: hide})
		en.Cap = 50
		if _, err := en.Submit(e.ctx); err != nil {
			t.Fatal(err)
		}
		// A job an earlier version recorded, without its submission: the resend is rebuilt
		// from posts that changed since, and the provider answers 409.
		id := killAfterAccepted(t, e)
		if _, err := e.pool.Exec(e.ctx, `UPDATE social_enrich_jobs SET submission = NULL WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		st, err := en.Submit(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if prov.Stats().Mismatches != 1 || (!hide && st.Adopted != 1) {
			t.Errorf("hide job %v: %d mismatches, %d adopted; want one 409, adopted when named", hide, prov.Stats().Mismatches, st.Adopted)
		}
		untilDone(t, e, en, clk)
		if n := e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1`, string(social.EnrichFailed)); n != e.count(
			`SELECT count(*) FROM social_post_content WHERE media_url_missing AND media_type <> 'CAROUSEL_ALBUM'`) {
			t.Errorf("hide job %v: %d enrichments failed, want only the posts without a media URL", hide, n)
		}
		if n := e.count(`SELECT max(retries) FROM social_enrichments`); n != 0 {
			t.Errorf("hide job %v: a retry was used by the mismatch", hide)
		}
	}
}

func TestEnrichBadTokenParksTheProvider(t *testing.T) {
	t.Parallel()
	e, en, prov, clk := enrichEnv(t, enrichfake.Options{Cap: 50, RunFor: time.Second})
	en.Cap = 50
	// What an earlier version left: enrichments failed because the provider refused its token.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_enrichments SET status = $1, retries = 3,
last_error = 'job 7: enrichment API: HTTP 401 unauthorized: a valid bearer token is required' WHERE id IN (SELECT id FROM social_enrichments ORDER BY id LIMIT 5)`,
		string(social.EnrichFailed)); err != nil {
		t.Fatal(err)
	}
	refusedBoth := func(st social.EnrichStats, err error) {
		t.Helper()
		var pr *social.ProviderRefusedError
		if !errors.As(err, &pr) || len(st.Refused) != 2 {
			t.Fatalf("with a refused token: %v, refused %v; want both providers refused", err, st.Refused)
		}
	}
	// A wrong token from the start: submit records jobs (before sending, as always) but changes
	// nothing else, and says why.
	en.Clients = e.enrichClients("wrong-token")
	refusedBoth(en.Submit(e.ctx))
	if n := e.count(`SELECT count(*) FROM social_enrich_jobs WHERE status <> $1`, string(social.JobNew)); n != 0 {
		t.Errorf("%d jobs moved by a refused submit, want none", n)
	}
	if n := e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1 OR retries > 0`, string(social.EnrichRetry)); n != 0 {
		t.Errorf("%d enrichments retried by a refused submit", n)
	}
	en.Clients = e.enrichClients("prov-token")
	if _, err := en.Submit(e.ctx); err != nil {
		t.Fatal(err)
	}
	history := e.count(`SELECT count(*) FROM status_history WHERE machine = 'social_enrichments' AND to_status <> $1`, string(social.EnrichQueued))
	clk.advance(2 * time.Second)
	// The token is replaced by a wrong one while jobs run, their results ready: poll changes
	// nothing, and says why.
	en.Clients = e.enrichClients("wrong-token")
	running := e.count(`SELECT count(*) FROM social_enrich_jobs WHERE status = $1`, string(social.JobRunning))
	refusedBoth(en.Poll(e.ctx))
	if n := e.count(`SELECT count(*) FROM status_history WHERE machine = 'social_enrichments' AND to_status <> $1`, string(social.EnrichQueued)); n != history {
		t.Errorf("a refused token moved %d enrichments, want none", n-history)
	}
	if n := e.count(`SELECT count(*) FROM social_enrich_jobs WHERE status = $1`, string(social.JobRunning)); n != running || running == 0 {
		t.Errorf("%d jobs running after a refused poll, want the %d before", n, running)
	}
	if s := prov.Stats(); s.Unauthorized != 4 {
		t.Errorf("%d calls refused, want one per provider and command", s.Unauthorized)
	}
	// The right token again: the jobs whose results were ready are read, the rest goes on.
	en.Clients = e.enrichClients("prov-token")
	untilDone(t, e, en, clk)
	if n := e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1`, string(social.EnrichFailed)); n != e.count(
		`SELECT count(*) FROM social_post_content WHERE media_url_missing AND media_type <> 'CAROUSEL_ALBUM'`) {
		t.Errorf("%d enrichments failed, want only the posts without a media URL", n)
	}
	if n := e.count(`SELECT count(*) FROM social_enrich_jobs WHERE status <> $1`, string(social.JobSucceeded)); n != 0 {
		t.Errorf("%d jobs not succeeded", n)
	}
}

func TestEnrichResultPagesAreReadOnce(t *testing.T) {
	t.Parallel()
	// Five results a page, and every page after the first fails once with a 503.
	e, en, prov, clk := enrichEnv(t, enrichfake.Options{Cap: 50, RunFor: time.Second, PageSize: 5, FlakyResults: true})
	en.Cap = 50
	untilDone(t, e, en, clk)
	pages := e.count(`SELECT sum(ceil(jsonb_array_length(submission->'items') / 5.0))::int FROM social_enrich_jobs`)
	if s := prov.Stats(); s.ResultFaults == 0 || s.ResultReads != pages {
		t.Errorf("%d results pages read (%d faults), want each of the %d pages once", s.ResultReads, s.ResultFaults, pages)
	}
	if n := e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1`, string(social.EnrichFailed)); n != e.count(
		`SELECT count(*) FROM social_post_content WHERE media_url_missing AND media_type <> 'CAROUSEL_ALBUM'`) {
		t.Errorf("%d enrichments failed, want only the posts without a media URL", n)
	}
}
