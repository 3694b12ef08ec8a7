package social_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/status"
)

// outage answers every Graph API request whose path ends with one of its suffixes with the
// platform's transient error (HTTP 500, code 2, is_transient), as an outage of one endpoint does,
// and passes the others to the fake.
type outage struct {
	next http.Handler
	mu   sync.Mutex
	down []string
}

func (o *outage) set(suffixes ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = suffixes
}

func (o *outage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	down := false
	for _, s := range o.down {
		down = down || strings.HasSuffix(r.URL.Path, s)
	}
	o.mu.Unlock()
	if !down {
		o.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(`{"error":{"message":"An unexpected error has occurred. Please retry your request later.","type":"OAuthException","code":2,"is_transient":true,"fbtrace_id":"AoutageTrace"}}`))
}

// A profile read that failed leaves the account in sync_retry before its cycle started; the
// retried read must start the cycle, or a listing completed in it is not known as done, and a
// rerun of the posts step (after its stories failed, or its process died) lists the newest page
// again and stores it twice. Likewise a failed profile read of a synced account starts a new
// cycle when retried, whose listing is not skipped as done by the cycle before.
func TestRetriedProfileReadStartsItsCycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 61, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "c_cycle", Connected: true, Posts: 30, Stories: 1},
	}})
	o := &outage{next: e.fake}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	e.base = srv.URL + "/v23.0"
	e.addAll()
	id := e.fake.Accounts()[0].ID
	s := e.syncer(0, 0)
	state := func() string {
		var got string
		if err := e.pool.QueryRow(e.ctx, `SELECT status FROM social_accounts WHERE ig_user_id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	step := func(name string, fn func() (social.Stats, error), want status.Status) {
		t.Helper()
		if _, err := fn(); err != nil {
			t.Fatalf("%s: %v\nlogs:\n%s", name, err, e.logs.String())
		}
		if got := state(); got != string(want) {
			t.Fatalf("after %s: account in %s, want %s", name, got, want)
		}
	}
	profiles := func() (social.Stats, error) { return s.SyncProfiles(e.ctx) }
	posts := func() (social.Stats, error) { return s.SyncPosts(e.ctx) }
	twice := func() {
		t.Helper()
		// A page is read once a cycle: the profile too, which a retry of the cycle's listing or
		// stories does not read again.
		dup := e.count(`SELECT count(*) FROM (SELECT 1 FROM social_raw_pages WHERE items > 0 GROUP BY endpoint, request HAVING count(*) > 1) d`)
		if dup != 0 {
			t.Fatalf("%d pages stored twice", dup)
		}
		if n := e.count(`SELECT count(*) FROM social_account_counts`); n != 1 {
			t.Fatalf("%d observations of the account's counts in one cycle, want 1", n)
		}
	}

	o.set("/" + id)
	step("failed profile read", profiles, social.SyncRetry)
	o.set()
	step("retried profile read", profiles, social.PostsPending)
	o.set("/stories")
	step("listing with its stories failing", posts, social.SyncRetry)
	o.set()
	calls := e.fake.Stats().Requests
	step("retry after the stories failed", profiles, social.PostsPending)
	if n := e.fake.Stats().Requests - calls; n != 0 {
		t.Errorf("the retry made %d calls: the profile was read again in its cycle", n)
	}
	step("stories", posts, social.Synced)
	twice()
	if n := e.count(`SELECT count(*) FROM social_raw_pages WHERE endpoint = 'media'`); n != 1 {
		t.Errorf("%d media pages stored in the first cycle, want 1", n)
	}

	// The next cycle: its profile read fails, then is retried; its listing must happen.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_accounts SET next_attempt_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	o.set("/" + id)
	step("failed profile read of the next cycle", profiles, social.SyncRetry)
	o.set()
	step("retried profile read of the next cycle", profiles, social.PostsPending)
	step("listing of the next cycle", posts, social.Synced)
	if n := e.count(`SELECT count(*) FROM social_raw_pages WHERE endpoint = 'media'`); n != 2 {
		t.Errorf("%d media pages stored after two cycles, want 2: the second cycle's listing was skipped", n)
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE listed_at < cycle_started_at OR cycle_started_at <= last_cycle_started_at`); n != 0 {
		t.Error("the second cycle was not started by its retried profile read")
	}
}
