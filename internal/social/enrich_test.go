package social_test

import (
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/enrichfake"
	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/social/enrichapi"
)

// clock is a settable clock shared by a fake provider and the enricher.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func enrichEnv(t *testing.T, o enrichfake.Options) (*env, *social.Enricher, *enrichfake.Server, *clock) {
	t.Helper()
	e := newEnv(t, graphfake.Options{Seed: 21, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "cafe", Connected: true, Posts: 30, Comments: 60}}})
	e.addAll()
	s := e.syncer(0, 0)
	s.Providers = []string{"vision", "text"}
	e.syncAll(s)
	clk := &clock{}
	clk.ns.Store(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC).UnixNano())
	o.Token, o.Now = "prov-token", clk.now
	prov := enrichfake.New(o)
	srv := httptest.NewServer(prov)
	t.Cleanup(srv.Close)
	e.enrichURL = srv.URL
	en := &social.Enricher{Pool: e.pool, Log: slog.New(slog.NewTextHandler(e.logs, nil)), Actor: "test", Clients: e.enrichClients("prov-token"),
		Cap: 2, JobPosts: 5, PollMin: time.Second, PollMax: 4 * time.Second, Now: clk.now,
		RetryPolicy: retry.Policy{Delays: []time.Duration{0, 0, 0}}}
	return e, en, prov, clk
}

// enrichClients are clients of both providers of the fake with token.
func (e *env) enrichClients(token string) map[string]*enrichapi.Client {
	e.t.Helper()
	clients := map[string]*enrichapi.Client{}
	for _, name := range []string{"vision", "text"} {
		c, err := enrichapi.New(e.enrichURL+"/v1/"+name, token)
		if err != nil {
			e.t.Fatal(err)
		}
		clients[name] = c
	}
	return clients
}

func TestEnrichWithinTheCapUntilDone(t *testing.T) {
	t.Parallel()
	e, en, prov, clk := enrichEnv(t, enrichfake.Options{Cap: 2, RunFor: 3 * time.Second, FailEvery: 4})
	posts := e.count(`SELECT count(*) FROM social_posts`)
	if n := e.count(`SELECT count(*) FROM social_enrichments`); n != 2*posts {
		t.Fatalf("%d enrichments queued, want %d (each post for each provider)", n, 2*posts)
	}
	for range 200 {
		if _, err := en.Submit(e.ctx); err != nil {
			t.Fatal(err)
		}
		if inflight := e.count(`SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM social_enrich_jobs WHERE status = ANY($1) GROUP BY provider) x`,
			[]string{string(social.JobNew), string(social.JobRunning)}); inflight > 2 {
			t.Fatalf("%d jobs in flight at one provider, cap 2", inflight)
		}
		clk.advance(time.Second)
		if _, err := en.Poll(e.ctx); err != nil {
			t.Fatal(err)
		}
		if e.count(`SELECT count(*) FROM social_enrichments WHERE status <> ALL($1)`, []string{string(social.Enriched), string(social.EnrichFailed)}) == 0 {
			break
		}
	}
	if n := e.count(`SELECT count(*) FROM social_enrichments WHERE status <> ALL($1)`, []string{string(social.Enriched), string(social.EnrichFailed)}); n != 0 {
		t.Fatalf("%d enrichments unfinished", n)
	}
	// Only the copyrighted reels (no media_url) cannot be recognised; every failed job was retried.
	failed := e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1`, string(social.EnrichFailed))
	noURL := e.count(`SELECT count(*) FROM social_post_content WHERE media_url_missing AND media_type <> 'CAROUSEL_ALBUM'`)
	if failed != noURL {
		t.Errorf("%d enrichments failed, want %d (posts without a media URL)", failed, noURL)
	}
	if e.count(`SELECT count(*) FROM social_enrich_jobs WHERE status = $1`, string(social.JobFailed)) == 0 {
		t.Error("no job failed: FailEvery should have failed some")
	}
	if e.count(`SELECT count(DISTINCT post_id) FROM social_labels WHERE provider = 'vision'`) != posts-noURL {
		t.Error("not every post with media has vision labels")
	}
	if s := prov.Stats(); s.CapRefusals != 0 {
		t.Errorf("the provider refused %d jobs over its cap", s.CapRefusals)
	}
}

func TestEnrichResubmitsExpiredAndIsIdempotent(t *testing.T) {
	t.Parallel()
	e, en, prov, clk := enrichEnv(t, enrichfake.Options{Cap: 50, RunFor: time.Second, Expiry: time.Minute})
	en.Cap = 50
	if _, err := en.Submit(e.ctx); err != nil {
		t.Fatal(err)
	}
	// A submit interrupted after the provider accepted a job but before we recorded it: the
	// job is sent again with its token, and the provider answers with the same job.
	var id int64
	var external string
	if err := e.pool.QueryRow(e.ctx, `UPDATE social_enrich_jobs SET status = $1 WHERE id = (SELECT min(id) FROM social_enrich_jobs)
RETURNING id, external_id`, string(social.JobNew)).Scan(&id, &external); err != nil {
		t.Fatal(err)
	}
	if _, err := en.Submit(e.ctx); err != nil {
		t.Fatal(err)
	}
	var again string
	if err := e.pool.QueryRow(e.ctx, `SELECT external_id FROM social_enrich_jobs WHERE id = $1`, id).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again != external || prov.Stats().Duplicates != 1 {
		t.Errorf("resent job: %s then %s, %d duplicates; want the same job", external, again, prov.Stats().Duplicates)
	}
	jobs := e.count(`SELECT count(*) FROM social_enrich_jobs`)
	// Nobody polls for two minutes: the results expire.
	clk.advance(2 * time.Minute)
	st, err := en.Poll(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Expired != jobs || e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1`, string(social.EnrichPending)) == 0 {
		t.Fatalf("poll after expiry: %+v", st)
	}
	// Resubmitted with new tokens, collected in time.
	if _, err := en.Submit(e.ctx); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Second)
	if _, err := en.Poll(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM social_enrichments WHERE status = $1`, string(social.Enriched)); n == 0 {
		t.Error("nothing enriched after the resubmission")
	}
	if n := e.count(`SELECT count(*) FROM social_raw_pages WHERE endpoint LIKE 'enrich:%'`); n == 0 {
		t.Error("no raw result pages stored")
	}
}
