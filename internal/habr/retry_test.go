package habr_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/habrfake"
	"github.com/ingest-dev/ingest/internal/fetch"
	"github.com/ingest-dev/ingest/internal/habr"
	"github.com/ingest-dev/ingest/internal/status"
)

// clock is a run's time, moved forward by the tests instead of waiting.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// A page that keeps failing is retried on the schedule, never before its attempt is due, after
// the new publications of each run, and given up on after the schedule's last retry.
func TestExtractRetriesEndInBroken(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	all := b.ids(t, habr.Pending)
	b.keepOnly(t, all[0], all[1], all[2], all[len(all)-1])
	pending := b.ids(t, habr.Pending)
	failing, fresh := pending[0], pending[len(pending)-1]
	if err := b.fake.SetFault(b.pathOf(t, failing), habrfake.Fault{Kind: habrfake.FaultStatus, Code: 503}); err != nil {
		t.Fatal(err)
	}
	// One publication is held back, to be new in the second run.
	if _, err := habr.Machine.Move(b.ctx, b.pool, fresh, habr.Pending, habr.Broken, status.Change{Actor: "test"}); err != nil {
		t.Fatal(err)
	}

	c := &clock{t: time.Now()}
	e := b.extraction()
	e.Now = c.now
	attempts := habr.RetrySchedule.MaxRetries() + 1
	for run := 1; run <= attempts; run++ {
		if run == 2 {
			if _, err := habr.Machine.SetManual(b.ctx, b.pool, []int64{fresh}, habr.Pending, "new", "manual: test"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Run(b.ctx); err != nil {
			t.Fatal(err)
		}
		p, _, err := habr.GetPublication(b.ctx, b.pool, failing)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.fake.Requests(b.pathOf(t, failing)); got != run {
			t.Fatalf("run %d: %d requests for the failing page, want %d", run, got, run)
		}
		if run < attempts {
			if p.Status != habr.Failed || p.Retries != run || p.NextAttemptAt == nil || p.LastError != "HTTP 503 Service Unavailable" {
				t.Fatalf("run %d: %+v, want extract_failed with %d retries used and a next attempt", run, p, run)
			}
			// A run before the next attempt is due does not fetch the page.
			c.t = p.NextAttemptAt.Add(-time.Second)
			if st, err := e.Run(b.ctx); err != nil || b.fake.Requests(b.pathOf(t, failing)) != run {
				t.Fatalf("run %d before due: %+v %v, %d requests", run, st, err, b.fake.Requests(b.pathOf(t, failing)))
			}
			c.t = *p.NextAttemptAt
			continue
		}
		want := "gave up after 6 attempts: HTTP 503 Service Unavailable"
		if p.Status != habr.Broken || p.LastError != want {
			t.Errorf("after %d attempts: %s %q, want %s %q", attempts, p.Status, p.LastError, habr.Broken, want)
		}
	}
	// The new publication of the second run went before the retry of that run.
	hist := func(id int64) int64 {
		var n int64
		if err := b.pool.QueryRow(b.ctx, `SELECT min(h.id) FROM status_history h WHERE machine = 'habr' AND record_id = $1
AND actor = 'test' AND reason = ''`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var secondRetry int64
	if err := b.pool.QueryRow(b.ctx, `SELECT id FROM status_history WHERE machine = 'habr' AND record_id = $1 ORDER BY id OFFSET 1 LIMIT 1`,
		failing).Scan(&secondRetry); err != nil {
		t.Fatal(err)
	}
	if got := hist(fresh); got > secondRetry {
		t.Errorf("the new publication was extracted (history %d) after the due retry (history %d)", got, secondRetry)
	}
	if got, _ := b.statusOf(t, fresh); got != habr.Extracted {
		t.Errorf("new publication is %s", got)
	}
}

// errKilled stands for the death of the process: a page that takes all the memory.
type errKilled struct{}

// killingFetcher "kills the process" (panics out of the run) whenever one path is fetched.
type killingFetcher struct {
	habr.Fetcher
	path string
}

func (f killingFetcher) Get(ctx context.Context, ref string) (*fetch.Response, error) {
	if u, err := url.Parse(ref); err == nil && u.Path == f.path {
		panic(errKilled{})
	}
	return f.Fetcher.Get(ctx, ref)
}

// An attempt that never finished counts: a page that kills the process every time it is tried
// no longer blocks the pages after it, and is given up on after the schedule's attempts.
func TestExtractCountsAttemptsThatNeverFinished(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	b.keepOnly(t, b.ids(t, habr.Pending)[:7]...)
	pending := b.ids(t, habr.Pending)
	killer := pending[3]
	c := &clock{t: time.Now()}
	e := b.extraction()
	e.Fetcher = killingFetcher{Fetcher: b.fetch, path: b.pathOf(t, killer)}
	e.Now = c.now
	run := func() (st habr.ExtractStats, died bool) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(errKilled); !ok {
					panic(r)
				}
				died = true
			}
		}()
		st, err := e.Run(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st, false
	}

	if _, died := run(); !died {
		t.Fatal("the first run did not reach the killing page")
	}
	if got := len(b.ids(t, habr.Extracted)); got != 3 {
		t.Fatalf("%d extracted before the death, want the 3 before the killing page", got)
	}
	st, died := run()
	if died || st.Unfinished != 1 || st.Extracted != len(pending)-4 {
		t.Fatalf("run after the death = %+v (died %v), want the unfinished attempt counted and every other page extracted", st, died)
	}
	p, _, err := habr.GetPublication(b.ctx, b.pool, killer)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != habr.Failed || p.Retries != 1 || !strings.Contains(p.LastError, "never finished") || p.AttemptStartedAt != nil {
		t.Fatalf("killing page after one death = %+v", p)
	}

	// Every time it is due it kills the run again; each death is counted by the next run.
	deaths := 1
	for i := 0; i < 20 && p.Status == habr.Failed; i++ {
		c.t = c.t.Add(24 * time.Hour)
		if _, died := run(); died {
			deaths++
		}
		if p, _, err = habr.GetPublication(b.ctx, b.pool, killer); err != nil {
			t.Fatal(err)
		}
	}
	attempts := habr.RetrySchedule.MaxRetries() + 1
	if p.Status != habr.Broken || deaths != attempts || !strings.HasPrefix(p.LastError, "gave up after 6 attempts: attempt started ") {
		t.Errorf("killing page = %s %q after %d deaths, want %s after %d", p.Status, p.LastError, deaths, habr.Broken, attempts)
	}
	if got := len(b.ids(t, habr.Extracted)); got != len(pending)-1 {
		t.Errorf("%d extracted, want every page but the killing one (%d)", got, len(pending)-1)
	}
}

// A page over the size cap will not shrink: it is broken at once, with its size in the reason.
func TestExtractPageOverSizeCapIsBrokenAtOnce(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	id := b.ids(t, habr.Pending)[0]
	b.keepOnly(t, id)
	var err error
	b.fetch, err = fetch.New(fetch.Config{BaseURL: b.base, UserAgent: "ingest-test", MaxBodyBytes: 16 << 10, Timeout: fetchGuard})
	if err != nil {
		t.Fatal(err)
	}
	b.extract(t)
	p, _, err := habr.GetPublication(b.ctx, b.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != habr.Broken || p.Retries != 0 || !strings.HasPrefix(p.LastError, "page over the size cap: ") ||
		!strings.Contains(p.LastError, "16384 bytes") {
		t.Errorf("page over the cap = %s, %d retries, %q; want broken at once with the size", p.Status, p.Retries, p.LastError)
	}
}
