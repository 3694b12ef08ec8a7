package habr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/habrfake"
	"github.com/ingest-dev/ingest/internal/fetch"
	"github.com/ingest-dev/ingest/internal/habr"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/status"
)

// feeds are the generated feeds of the fake, asking for everything it has.
var feeds = []string{habrfake.FeedArticles + "?fl=ru&limit=100", habrfake.FeedNews + "?fl=ru&limit=100"}

type pipelineBundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	fake  *habrfake.Server
	base  string // the fake's URL
	fetch *fetch.Client
	log   *slog.Logger
}

func setupPipeline(t testing.TB) *pipelineBundle {
	t.Helper()
	return setupPipelineWith(t, habrfake.Options{})
}

func setupPipelineWith(t testing.TB, opts habrfake.Options) *pipelineBundle {
	t.Helper()
	fake, base := habrfake.Start(t, opts)
	b := newPipelineBundle(t, base)
	b.fake = fake
	return b
}

// fetchGuard bounds a test's requests to the fake: only a hang guard, never a budget a busy
// machine can run out of (a feed of 100 items under the race detector took over 2 s on a 2-CPU
// machine at load 20, and its discovery failed). A test of a timeout uses hangingFetcher.
const fetchGuard = 3 * time.Minute

// newPipelineBundle works against the Habr at base (fake is left nil).
func newPipelineBundle(t testing.TB, base string) *pipelineBundle {
	t.Helper()
	client, err := fetch.New(fetch.Config{BaseURL: base, UserAgent: "ingest-test", Timeout: fetchGuard})
	if err != nil {
		t.Fatal(err)
	}
	return &pipelineBundle{ctx: context.Background(), pool: dbtest.Pool(t), base: base, fetch: client,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// hangingFetcher fetches the paths in hang, where the fake never answers, with a client that
// gives up after a second, and every other path with the bundle's: the timeout is certain
// (nothing ever comes), and no healthy page races it however busy the machine is.
type hangingFetcher struct {
	habr.Fetcher
	impatient habr.Fetcher
	hang      map[string]bool
}

func (b *pipelineBundle) hangingFetcher(t *testing.T, paths ...string) hangingFetcher {
	t.Helper()
	impatient, err := fetch.New(fetch.Config{BaseURL: b.base, UserAgent: "ingest-test", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := hangingFetcher{Fetcher: b.fetch, impatient: impatient, hang: map[string]bool{}}
	for _, p := range paths {
		if err := b.fake.SetFault(p, habrfake.Fault{Kind: habrfake.FaultSlow, Delay: time.Hour}); err != nil {
			t.Fatal(err)
		}
		f.hang[p] = true
	}
	return f
}

func (f hangingFetcher) Get(ctx context.Context, ref string) (*fetch.Response, error) {
	if u, err := url.Parse(ref); err == nil && f.hang[u.Path] {
		return f.impatient.Get(ctx, ref)
	}
	return f.Fetcher.Get(ctx, ref)
}

func (b *pipelineBundle) discover(t *testing.T) (habr.DiscoverStats, error) {
	t.Helper()
	d := &habr.Discoverer{Pool: b.pool, Fetcher: b.fetch, Log: b.log, Metrics: metrics.New(), Feeds: feeds}
	return d.Run(b.ctx)
}

func (b *pipelineBundle) extraction() *habr.Extraction {
	return &habr.Extraction{Pool: b.pool, Fetcher: b.fetch, Extractor: habr.NewExtractor(), Log: b.log,
		Metrics: metrics.New(), Actor: "test", Pause: -1}
}

func (b *pipelineBundle) extract(t *testing.T) habr.ExtractStats {
	t.Helper()
	st, err := b.extraction().Run(b.ctx)
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	return st
}

func (b *pipelineBundle) counts(t *testing.T) map[status.Status]int64 {
	t.Helper()
	cs, err := habr.Machine.Counts(b.ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	out := map[status.Status]int64{}
	for _, c := range cs {
		out[c.Status] = c.N
	}
	return out
}

func (b *pipelineBundle) statusOf(t *testing.T, id int64) (status.Status, string) {
	t.Helper()
	p, _, err := habr.GetPublication(b.ctx, b.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	return p.Status, p.LastError
}

// pathOf is the URL path of a registered publication (where faults are set on the fake).
func (b *pipelineBundle) pathOf(t *testing.T, id int64) string {
	t.Helper()
	p, _, err := habr.GetPublication(b.ctx, b.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// keepOnly deletes every registered publication but ids, so that a test extracts only what it
// looks at (a whole extraction under the race detector takes seconds).
func (b *pipelineBundle) keepOnly(t *testing.T, ids ...int64) {
	t.Helper()
	if _, err := b.pool.Exec(b.ctx, `DELETE FROM habr_publications WHERE NOT id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
}

// ids returns the ids of publications in a status, in id order.
func (b *pipelineBundle) ids(t *testing.T, s status.Status) []int64 {
	t.Helper()
	ids, err := habr.Machine.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{s}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestDiscoverIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	st, err := b.discover(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.New == 0 || st.New != st.Items || st.Bad != 0 {
		t.Fatalf("first discovery = %+v, want every item new", st)
	}
	first := b.counts(t)
	// Move one along so we can see that rediscovery does not reset it.
	id := b.ids(t, habr.Pending)[0]
	if _, err := habr.Machine.Move(b.ctx, b.pool, id, habr.Pending, habr.Broken, status.Change{Actor: "test", Reason: "x"}); err != nil {
		t.Fatal(err)
	}

	st2, err := b.discover(t)
	if err != nil {
		t.Fatal(err)
	}
	if st2.New != 0 || st2.Items != st.Items {
		t.Errorf("rediscovery = %+v, want %d items and nothing new", st2, st.Items)
	}
	if got, _ := b.statusOf(t, id); got != habr.Broken {
		t.Errorf("rediscovery changed publication %d to %s", id, got)
	}
	if total := b.counts(t); total[habr.Pending]+total[habr.Broken] != first[habr.Pending] {
		t.Errorf("counts after rediscovery = %v, first = %v", total, first)
	}

	p, _, err := habr.GetPublication(b.ctx, b.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(p.URL)
	if u.Scheme != "https" || u.Host != "habr.com" || u.RawQuery != "" || p.Title == "" || p.PublishedAt == nil || p.PublishedRaw == "" {
		t.Errorf("registered publication lacks canonical data: %+v", p)
	}
}

func TestDiscoverSkipsBadItemsAndFeeds(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if err := b.fake.SetFault(habrfake.FeedArticles, habrfake.Fault{Kind: habrfake.FaultOffSiteItem}); err != nil {
		t.Fatal(err)
	}
	if err := b.fake.SetFault(habrfake.FeedNews, habrfake.Fault{Kind: habrfake.FaultMalformedFeed}); err != nil {
		t.Fatal(err)
	}
	st, err := b.discover(t)
	if !errors.Is(err, habr.ErrFeedsFailed) {
		t.Fatalf("discover = %v, want ErrFeedsFailed for the malformed feed", err)
	}
	if st.FeedsFailed != 1 || st.Bad != 1 || st.New == 0 || st.New != st.Items {
		t.Errorf("stats = %+v, want 1 failed feed, 1 skipped item, the rest registered", st)
	}
	if want := fmt.Sprintf("the other feeds were read: %d new publications registered", st.New); !strings.Contains(err.Error(), want) {
		t.Errorf("discover = %v, want it to say %q", err, want)
	}
	// Every feed failing registers nothing, and says so.
	for _, f := range []string{habrfake.FeedArticles, habrfake.FeedNews} {
		if err := b.fake.SetFault(f, habrfake.Fault{Kind: habrfake.FaultMalformedFeed}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.discover(t); err == nil || !strings.Contains(err.Error(), "nothing was registered") || strings.Contains(err.Error(), "other feeds") {
		t.Errorf("discover with every feed failing = %v, want it to say nothing was registered", err)
	}
}

func TestExtractOutcomesByErrorClass(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	pending := b.ids(t, habr.Pending)
	if len(pending) < 10 {
		t.Fatalf("only %d publications discovered", len(pending))
	}
	faults := []struct {
		fault  habrfake.Fault
		want   status.Status
		reason string
	}{
		{habrfake.Fault{Kind: habrfake.FaultStatus, Code: 503}, habr.Failed, "HTTP 503 Service Unavailable"},
		{habrfake.Fault{Kind: habrfake.FaultStatus, Code: 404}, habr.Failed, "HTTP 404 Not Found"},
		{habrfake.Fault{Kind: habrfake.FaultRedirect, Code: 301, Location: "/ru/articles/1/"}, habr.Failed, "HTTP 301 Moved Permanently (redirect to /ru/articles/1/)"},
		{habrfake.Fault{Kind: habrfake.FaultTruncated}, habr.Failed, "truncated body"},
		{habrfake.Fault{Kind: habrfake.FaultDeleted}, habr.Broken, ""},
		{habrfake.Fault{Kind: habrfake.FaultListing}, habr.Broken, ""},
	}
	for i, f := range faults {
		if err := b.fake.SetFault(b.pathOf(t, pending[i]), f.fault); err != nil {
			t.Fatal(err)
		}
	}
	// One more page never answers: its fetch times out.
	hanging := pending[len(faults)]
	e := b.extraction()
	e.Fetcher = b.hangingFetcher(t, b.pathOf(t, hanging))
	st, err := e.Run(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Failed != 5 || st.Broken != 2 || st.Extracted != len(pending)-7 {
		t.Errorf("first run = %+v, want 5 failed, 2 broken, %d extracted", st, len(pending)-7)
	}
	for i, f := range faults {
		got, reason := b.statusOf(t, pending[i])
		if got != f.want || (f.reason != "" && reason != f.reason) || reason == "" {
			t.Errorf("fault %s: publication %d is %s (%q), want %s (%q)", f.fault.Kind, pending[i], got, reason, f.want, f.reason)
		}
	}
	if got, reason := b.statusOf(t, hanging); got != habr.Failed || reason != "timed out" {
		t.Errorf("page that never answers: publication %d is %s (%q), want %s (%q)", hanging, got, reason, habr.Failed, "timed out")
	}

	// The source recovers. A failed publication waits for its next attempt: a run before then
	// leaves it alone; once it is due it is retried. Broken and extracted ones are never touched.
	for i := range len(faults) + 1 {
		b.fake.ClearFault(b.pathOf(t, pending[i]))
	}
	before := b.fake.TotalRequests()
	if st = b.extract(t); st.Done != 0 || b.fake.TotalRequests() != before {
		t.Errorf("run before the retries are due = %+v, %d requests; want nothing done", st, b.fake.TotalRequests()-before)
	}
	e = b.extraction()
	e.Now = func() time.Time { return time.Now().Add(time.Hour) }
	st, err = e.Run(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Extracted != 5 || st.Done != 5 || st.Backlog != 5 {
		t.Errorf("run once due = %+v, want the 5 failed ones extracted and nothing else", st)
	}
	if got := b.fake.TotalRequests() - before; got != 5 {
		t.Errorf("run once due made %d requests, want 5 (extracted and broken are not fetched)", got)
	}
	c := b.counts(t)
	if c[habr.Broken] != 2 || c[habr.Failed] != 0 || c[habr.Pending] != 0 || c[habr.Extracted] != int64(len(pending)-2) {
		t.Errorf("final counts = %v", c)
	}
	// Every extracted publication has exactly one Markdown row, with hash and version.
	var rows, bad int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*), count(*) FILTER (WHERE markdown = '' OR content_hash = '' OR extractor_version = '')
FROM habr_markdown`).Scan(&rows, &bad); err != nil {
		t.Fatal(err)
	}
	if int64(rows) != c[habr.Extracted] || bad != 0 {
		t.Errorf("habr_markdown has %d rows (%d incomplete), want %d", rows, bad, c[habr.Extracted])
	}
}

func TestExtractUsesCacheWithinTTL(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	id := b.ids(t, habr.Pending)[0]
	path := b.pathOf(t, id)
	b.extract(t)
	if n := b.fake.Requests(path); n != 1 {
		t.Fatalf("%d requests for %s, want 1", n, path)
	}

	// A person asks for a re-extraction: the cached page is used, no request is made.
	if _, err := habr.Machine.SetManual(b.ctx, b.pool, []int64{id}, habr.Pending, "re-extract", "manual: test"); err != nil {
		t.Fatal(err)
	}
	st := b.extract(t)
	if st.Extracted != 1 || st.Cached != 1 {
		t.Errorf("re-extraction = %+v, want 1 extracted from cache", st)
	}
	if n := b.fake.Requests(path); n != 1 {
		t.Errorf("%d requests for %s after a cache hit, want still 1", n, path)
	}

	// Past the TTL the page is fetched again, and expired entries are purged.
	if _, err := b.pool.Exec(b.ctx, `UPDATE habr_html_cache SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if _, err := habr.Machine.SetManual(b.ctx, b.pool, []int64{id}, habr.Pending, "re-extract", "manual: test"); err != nil {
		t.Fatal(err)
	}
	st = b.extract(t)
	if st.Extracted != 1 || st.Cached != 0 || b.fake.Requests(path) != 2 {
		t.Errorf("after expiry: %+v, %d requests; want a fresh fetch", st, b.fake.Requests(path))
	}
	var cached, expired int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*), count(*) FILTER (WHERE expires_at <= now()) FROM habr_html_cache`).Scan(&cached, &expired); err != nil {
		t.Fatal(err)
	}
	if cached != 1 || expired != 0 {
		t.Errorf("cache holds %d pages (%d expired), want just the fresh one", cached, expired)
	}

	// A structural failure still caches the HTML (it arrived), so a fix to the extractor
	// followed by a manual reset does not refetch.
	hist, err := habr.Machine.History(b.ctx, b.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 5 || hist[1].Actor != "manual: test" {
		t.Errorf("history = %+v, want extract, manual reset, extract, manual reset, extract", hist)
	}
}

func TestExtractStopsCleanlyOnCancel(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	pending := b.ids(t, habr.Pending)
	// The third publication hangs (for longer than the test may take); the run is cancelled
	// once it waits for it.
	hanging := b.pathOf(t, pending[2])
	if err := b.fake.SetFault(hanging, habrfake.Fault{Kind: habrfake.FaultSlow, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	e := b.extraction()
	go func() {
		for b.fake.Requests(hanging) == 0 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	st, err := e.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v, want context.Canceled", err)
	}
	if st.Extracted != 2 {
		t.Errorf("extracted %d before the stop, want 2", st.Extracted)
	}
	// The publication in flight was not marked failed, and its attempt is not held against it:
	// a stop is not the source's fault.
	if p, _, err := habr.GetPublication(b.ctx, b.pool, pending[2]); err != nil || p.Status != habr.Pending || p.AttemptStartedAt != nil {
		t.Errorf("in-flight publication = %+v, %v; want still %s with no open attempt", p, err, habr.Pending)
	}
	b.fake.ClearFault(b.pathOf(t, pending[2]))
	st = b.extract(t)
	if st.Extracted != len(pending)-2 {
		t.Errorf("rerun extracted %d, want %d", st.Extracted, len(pending)-2)
	}
}

// Extraction keeps what the page says about the publication: hubs and tags apart (the feed's
// mixed categories stay as received), the author's login and display name, the company blog and
// a translation's original.
func TestExtractStoresPageMetadata(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	b.keepOnly(t, 462783, 769102, 348118)
	b.extract(t)
	p, _, err := habr.GetPublication(b.ctx, b.pool, 462783)
	if err != nil {
		t.Fatal(err)
	}
	if p.Author != "SmirkinDA" || p.AuthorName != "Дмитрий Смиркин" || p.Company != (habr.Company{Alias: "parallels", Name: "Блог компании Parallels"}) ||
		!slices.Equal(p.Hubs, []string{"Читальный зал", "Киберпанк"}) || !slices.Equal(p.Tags, []string{"parallels", "martix", "history", "movie"}) {
		t.Errorf("company post 462783 = %+v", p)
	}
	p, _, err = habr.GetPublication(b.ctx, b.pool, 769102)
	if err != nil {
		t.Fatal(err)
	}
	want := habr.Translation{OriginalAuthor: "Bilgin Ibryam",
		OriginalURL: "https://developers.redhat.com/articles/2021/09/21/distributed-transaction-patterns-microservices-compared"}
	if p.Translation != want || len(p.Tags) != 10 || !slices.Equal(p.Hubs, []string{"Java", "Распределённые системы", "Микросервисы"}) {
		t.Errorf("translation 769102 = %+v", p)
	}
	// A feed item of the 2018 feed lists tags among its categories; they stay as received, and
	// the page's hubs and tags are stored apart.
	p, _, err = habr.GetPublication(b.ctx, b.pool, 348118)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.FeedCategories, "ansible") || slices.Contains(p.Hubs, "ansible") || p.Status != habr.Extracted {
		t.Errorf("feed item 348118 = %+v", p)
	}
}

// The default feeds include the English ones: an English article is registered and extracted.
func TestDiscoverDefaultFeedsIncludeEnglish(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	d := &habr.Discoverer{Pool: b.pool, Fetcher: b.fetch, Log: b.log, Metrics: metrics.New()}
	st, err := d.Run(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Feeds != len(habr.DefaultFeeds) || st.New == 0 {
		t.Fatalf("discovery = %+v", st)
	}
	p, _, err := habr.GetPublication(b.ctx, b.pool, 453232)
	if err != nil {
		t.Fatalf("English article 453232 not registered: %v", err)
	}
	if p.URL != "https://habr.com/en/post/453232/" || p.Feed != "/en/rss/articles/?fl=en&limit=100" {
		t.Errorf("453232 registered as %s from %s", p.URL, p.Feed)
	}
	b.keepOnly(t, 453232)
	b.extract(t)
	if got, reason := b.statusOf(t, 453232); got != habr.Extracted {
		t.Errorf("453232 is %s (%s)", got, reason)
	}
}
