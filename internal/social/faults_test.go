package social_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
)

var failures = []string{string(social.SyncRetry), string(social.SyncFailed), string(social.CommentsRetry), string(social.CommentsFailed)}

func TestThrottlingParksWithoutFailingRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 31, NoFixtureAccounts: true, ThrottleEvery: 7, ThrottleFor: 100 * time.Millisecond,
		Accounts: []graphfake.AccountSpec{
			{Username: "a1", Connected: true, Posts: 110, Comments: 150},
			{Username: "a2", Connected: true, Posts: 30, Comments: 50},
			{Username: "d1", Posts: 110}, {Username: "d2", Posts: 210}}})
	e.addAll()
	s := e.syncer(0, 0)
	// The fake throttles every seventh request whatever the usage it reported: with several
	// calls in flight, those sent before the throttling answer came back would reach it while
	// throttled. Near a real limit the usage headers climb first and the gate lets one call of
	// the budget out at a time (TestNearTheLimitOneCallAtATime); here, one call at a time.
	s.Concurrency = 1
	for i := 0; i < 60 && e.count(`SELECT count(*) FROM social_accounts WHERE status <> $1`, string(social.Synced))+
		e.count(`SELECT count(*) FROM social_posts WHERE status <> $1`, string(social.Normalized)) > 0; i++ {
		e.syncAll(s)
		time.Sleep(200 * time.Millisecond) // the park floor of the test gate
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status = ANY($1)`, failures) +
		e.count(`SELECT count(*) FROM social_posts WHERE status = ANY($1)`, failures); n != 0 {
		t.Errorf("%d records failed because of throttling; they must wait instead", n)
	}
	if n := e.count(`SELECT count(*) FROM social_posts WHERE status <> $1`, string(social.Normalized)); n != 0 {
		t.Fatalf("%d posts not done after the throttling passed", n)
	}
	st := e.fake.Stats()
	if st.Throttled == 0 || st.WhileThrottled != 0 {
		t.Errorf("fake: %d throttling answers, %d calls while throttled; want some, and none", st.Throttled, st.WhileThrottled)
	}
	if e.count(`SELECT count(*) FROM social_parks WHERE key = 'app'`) == 0 || e.count(`SELECT count(*) FROM social_parks WHERE key LIKE 'token:%'`) == 0 {
		t.Error("want both the app (a Platform code on business discovery) and tokens (Business Use Case codes) parked")
	}
	for _, a := range e.fake.Accounts() {
		want := len(a.Posts)
		if got := e.count(`SELECT count(*) FROM social_posts p JOIN social_accounts a ON a.id = p.account_id WHERE a.ig_user_id = $1`, a.ID); got != want {
			t.Errorf("%s: %d posts, want %d", a.Username, got, want)
		}
	}
}

func TestUsageNearTheLimitSlowsThenParks(t *testing.T) {
	t.Parallel()
	// Near the limit: every call waits, nothing is parked, the work gets done.
	e := newEnv(t, graphfake.Options{Seed: 32, NoFixtureAccounts: true, UsageFloor: 90,
		Accounts: []graphfake.AccountSpec{{Username: "a1", Connected: true, Posts: 5}, {Username: "a2", Connected: true, Posts: 5}}})
	e.addAll()
	s := e.syncer(0, 0)
	var pauses atomic.Int32
	s.Gate.Sleep = func(ctx context.Context, d time.Duration) error {
		if d > 0 {
			pauses.Add(1)
		}
		return nil
	}
	e.syncAll(s)
	if pauses.Load() == 0 || e.count(`SELECT count(*) FROM social_parks`) != 0 {
		t.Errorf("at 90%% usage: %d pauses, %d parks; want pauses and no park", pauses.Load(), e.count(`SELECT count(*) FROM social_parks`))
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status = $1`, string(social.Synced)); n != 2 {
		t.Errorf("%d accounts synced, want 2", n)
	}

	// At the limit of the app's Platform Rate Limits (X-App-Usage, business discovery): the app
	// is parked after the first discovery answer, and only business discovery stops; connected
	// accounts, on their own Business Use Case budgets, are synced whole.
	accounts := []graphfake.AccountSpec{{Username: "a1", Connected: true, Posts: 5, Comments: 5}, {Username: "a2", Connected: true, Posts: 5, Comments: 5},
		{Username: "d1", Posts: 5}, {Username: "d2", Posts: 5}}
	e = newEnv(t, graphfake.Options{Seed: 32, NoFixtureAccounts: true, AppUsageFloor: 100, Accounts: accounts})
	e.addAll()
	s = e.syncer(0, 0)
	s.Gate.ParkFloor = time.Hour // parks outlast the test, however slow the machine
	st, err := s.SyncProfiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Truncated || !slices.Equal(st.Parked, []string{social.AppKey}) {
		t.Errorf("profiles: stopped early %v, parked %v; want the run to go on, the app parked", st.Truncated, st.Parked)
	}
	e.syncAll(s)
	if e.count(`SELECT count(*) FROM social_parks WHERE key = 'app' AND reason LIKE 'X-App-Usage at 100%'`) != 1 || e.count(`SELECT count(*) FROM social_parks`) != 1 {
		t.Error("want the app parked at 100% X-App-Usage, and nothing else")
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status = $1 AND access = 'connected'`, string(social.Synced)); n != 2 {
		t.Errorf("%d connected accounts synced, want 2: the app's park must not stop them", n)
	}
	if n := e.count(`SELECT count(*) FROM social_posts p JOIN social_accounts a ON a.id = p.account_id WHERE a.access = 'connected' AND p.status = $1`, string(social.Normalized)); n != 10 {
		t.Errorf("%d posts of connected accounts normalized, want 10", n)
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE access = 'discovery' AND status = ANY($1)`, []string{string(social.ProfilePending), string(social.PostsPending)}); n != 2 {
		t.Errorf("%d discovery accounts waiting, want 2 (not failed)", n)
	}
	if fs := e.fake.Stats(); fs.ByEndpoint["discovery_profile"]+fs.ByEndpoint["discovery_media"] != 1 {
		t.Errorf("business discovery calls %v; want one, then none while the app is parked", fs.ByEndpoint)
	}

	// At the limit of each token's Business Use Case budget (X-Business-Use-Case-Usage): a
	// token is parked after its first answer and stops that account only; business discovery
	// through the same token, on the app's budget, goes on.
	e = newEnv(t, graphfake.Options{Seed: 32, NoFixtureAccounts: true, BusinessUsageFloor: 100, Accounts: accounts})
	e.addAll()
	s = e.syncer(0, 0)
	s.Gate.ParkFloor = time.Hour
	e.syncAll(s)
	if n := e.count(`SELECT count(*) FROM social_parks WHERE key LIKE 'token:%' AND reason LIKE 'X-Business-Use-Case-Usage at 100%'`); n != 2 || e.count(`SELECT count(*) FROM social_parks WHERE key = 'app'`) != 0 {
		t.Errorf("%d tokens parked, want both, and not the app", n)
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status = $1 AND access = 'discovery'`, string(social.Synced)); n != 2 {
		t.Errorf("%d discovery accounts synced, want 2: a token's Business Use Case park must not stop business discovery", n)
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE access = 'connected' AND status = $1`, string(social.PostsPending)); n != 2 {
		t.Errorf("%d connected accounts waiting for their posts, want 2 (profile read, then parked, not failed)", n)
	}
}

// cancelOn wraps the fake: the context is cancelled when the nth request whose path ends in
// suffix arrives, as a kill would stop a run between two pages.
func cancelOn(t *testing.T, e *env, suffix string, n int32) context.Context {
	ctx, cancel := context.WithCancel(e.ctx)
	t.Cleanup(cancel)
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, suffix) && seen.Add(1) == n {
			cancel()
			http.Error(w, "stopped", http.StatusServiceUnavailable)
			return
		}
		e.fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.base = srv.URL + "/v23.0"
	return ctx
}

func TestInterruptedListingResumesOrRelistsOnARefusedCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 33, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{{Username: "big", Connected: true, Posts: 350}}})
	e.addAll()
	if _, err := e.syncer(0, 0).SyncProfiles(e.ctx); err != nil {
		t.Fatal(err)
	}
	plain := e.base
	ctx := cancelOn(t, e, "/media", 3)
	if _, err := e.syncer(0, 0).SyncPosts(ctx); err == nil {
		t.Fatal("the interrupted listing reported success")
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE list_cursor IS NOT NULL AND list_pages = 2`); n != 1 {
		t.Fatal("the cursor of the third page was not stored")
	}
	// The platform has invalidated its cursors meanwhile: the resumed listing is refused, lists
	// again from the newest page and still registers every post once.
	e.fake.InvalidateCursors()
	e.base = plain
	st, err := e.syncer(0, 0).SyncPosts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Restarts != 1 || !strings.Contains(e.logs.String(), "cursor refused") {
		t.Errorf("restarts %d; want the refused cursor to restart the listing once", st.Restarts)
	}
	if n := e.count(`SELECT count(*) FROM social_posts WHERE surface = 'feed'`); n != 350 {
		t.Errorf("%d posts, want 350", n)
	}
	if n := e.count(`SELECT count(*) FROM (SELECT ig_media_id FROM social_posts GROUP BY 1 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d posts twice", n)
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status = $1 AND posts_hwm_at IS NOT NULL AND list_cursor IS NULL`, string(social.Synced)); n != 1 {
		t.Error("the listing did not complete with a high-water mark")
	}
}

func TestStaleCursorIsNotUsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 34, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{{Username: "big", Connected: true, Posts: 150}}})
	e.addAll()
	if _, err := e.syncer(0, 0).SyncProfiles(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_accounts SET list_cursor = 'c3RhbGU', list_cursor_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	st, err := e.syncer(0, 0).SyncPosts(e.ctx)
	if err != nil || st.Restarts != 1 || st.Calls != 3 {
		t.Errorf("stale cursor: %+v %v; want it dropped without a call (2 media pages + stories)", st, err)
	}
}

func TestIncrementalSyncReadsOnlyWhatIsNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 35, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{{Username: "cafe", Connected: true, Posts: 150, Comments: 200}}})
	e.addAll()
	s := e.syncer(0, 0)
	s.Overlap = time.Hour
	e.syncAll(s)
	before := e.fake.Stats().ByEndpoint
	newID := e.fake.AddPost("cafe", 7)
	// The next sync is due.
	s.Now = func() time.Time { return time.Now().Add(7 * time.Hour) }
	e.syncAll(s)
	after := e.fake.Stats().ByEndpoint
	if d := after["media"] - before["media"]; d != 1 {
		t.Errorf("the incremental listing read %d media pages, want 1 (it stops at the high-water mark)", d)
	}
	if d := after["comments"] - before["comments"]; d != 1 {
		t.Errorf("the incremental sync read %d comment pages, want 1 (the new post's)", d)
	}
	if n := e.count(`SELECT count(*) FROM social_comments c JOIN social_posts p ON p.id = c.post_id WHERE p.ig_media_id = $1`, newID); n != 7 {
		t.Errorf("the new post has %d comments, want 7", n)
	}
	var calls string
	if err := e.pool.QueryRow(e.ctx, `SELECT last_cycle_calls::text FROM social_accounts`).Scan(&calls); err != nil || !strings.Contains(calls, `"media": 2`) {
		t.Errorf("the first cycle's calls were not kept: %s %v", calls, err)
	}
}

func TestShardsNeverShareAnAccount(t *testing.T) {
	t.Parallel()
	var specs []graphfake.AccountSpec
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		specs = append(specs, graphfake.AccountSpec{Username: n, Connected: true, Posts: 20, Comments: 40})
	}
	e := newEnv(t, graphfake.Options{Seed: 36, NoFixtureAccounts: true, Accounts: specs})
	e.addAll()
	var wg sync.WaitGroup
	for i := range 2 {
		s := e.syncer(i, 2)
		s.Actor = "shard " + string(rune('0'+i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, fn := range []func(context.Context) (social.Stats, error){s.SyncProfiles, s.SyncPosts, s.SyncComments, s.Normalize} {
				if _, err := fn(e.ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n := e.count(`SELECT count(*) FROM social_posts WHERE status <> $1`, string(social.Normalized)); n != 0 {
		t.Errorf("%d posts not normalized by the two shards together", n)
	}
	wrong := e.count(`SELECT count(*) FROM status_history h JOIN social_accounts a ON a.id = h.record_id
WHERE h.machine = 'social_accounts' AND h.actor <> 'shard ' || (a.id % 2)`) +
		e.count(`SELECT count(*) FROM status_history h JOIN social_posts p ON p.id = h.record_id
WHERE h.machine = 'social_posts' AND h.actor <> 'shard ' || (p.account_id % 2)`)
	if wrong != 0 {
		t.Errorf("%d moves made by the other shard", wrong)
	}
}

func TestValidationFailuresAreListedAndBlockNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 37, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{{Username: "cafe", Connected: true, Posts: 30, Comments: 200}}})
	e.addAll()
	s := e.syncer(0, 0)
	for _, fn := range []func(context.Context) (social.Stats, error){s.SyncProfiles, s.SyncPosts, s.SyncComments} {
		if _, err := fn(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	// One listed post with a timestamp nobody can read, one comment without an id.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_raw_pages SET body = jsonb_set(body, '{data,3,timestamp}', '"yesterday"') WHERE endpoint = 'media'`); err != nil {
		t.Fatal(err)
	}
	// The comment is taken from another post's page: the invalid post's comments are not
	// normalized at all, and with accounts and posts worked concurrently any post's page may be
	// the first stored.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_raw_pages SET body = body #- '{data,0,id}' WHERE id = (
SELECT min(r.id) FROM social_raw_pages r JOIN social_posts p ON p.id = r.post_id
WHERE r.endpoint = 'comments' AND r.items > 0
AND p.ig_media_id NOT IN (SELECT body->'data'->3->>'id' FROM social_raw_pages WHERE endpoint = 'media'))`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Normalize(e.ctx); err != nil {
		t.Fatal(err)
	}
	var reason string
	if err := e.pool.QueryRow(e.ctx, `SELECT last_error FROM social_posts WHERE status = $1`, string(social.PostInvalid)).Scan(&reason); err != nil ||
		!strings.Contains(reason, `timestamp "yesterday" is not ISO 8601`) {
		t.Errorf("invalid post: %q %v", reason, err)
	}
	if n := e.count(`SELECT count(*) FROM social_posts WHERE status = $1`, string(social.Normalized)); n != 29 {
		t.Errorf("%d posts normalized, want the 29 others", n)
	}
	if n := e.count(`SELECT count(*) FROM social_rejects WHERE kind = 'comment' AND reason LIKE '%no id%'`); n != 1 {
		t.Errorf("%d comments listed as rejected, want 1", n)
	}
	rep, err := social.BuildReport(e.ctx, e.pool, social.ReportOptions{})
	if err != nil || len(rep.InvalidPosts) != 1 || rep.RejectsTotal != 1 {
		t.Errorf("report lists %d invalid posts and %d rejects (%v)", len(rep.InvalidPosts), rep.RejectsTotal, err)
	}
	// A person may send it back by hand.
	res, err := social.Posts.SetManual(e.ctx, e.pool, []int64{*rep.InvalidPosts[0].PostID}, social.Fetched, "checked", "manual: t")
	if err != nil || res[0].Err != nil {
		t.Errorf("manual move: %v %v", err, res)
	}
}

func TestImportNamesBadLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 38, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{{Username: "v", Connected: true}}})
	v := e.fake.Accounts()[0]
	csv := "username,ig_user_id,token\nv," + v.ID + "," + v.Token + "\nnot a name!,,\nshop.one,,\n,123,\nshop.one,,\n"
	res, err := social.Import(e.ctx, e.pool, e.sealer, strings.NewReader(csv), "test")
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 2 || res.Unchanged != 1 || len(res.Failed) != 2 {
		t.Fatalf("import: %+v", res)
	}
	if res.Failed[0].Line != 3 || !strings.Contains(res.Failed[0].Error(), "not an Instagram username") ||
		res.Failed[1].Line != 5 || !strings.Contains(res.Failed[1].Error(), "not an IG user id") {
		t.Errorf("failures: %v", res.Failed)
	}
	for _, f := range res.Failed {
		if strings.Contains(f.Error(), v.Token) {
			t.Error("an import error shows a token")
		}
	}
}

// inFlight counts the requests a handler is answering at once, by budget, and the most seen
// for any budget.
type inFlight struct {
	next http.Handler
	mu   sync.Mutex
	now  map[string]int
	top  int
}

func (f *inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A business discovery call counts against the app's budget, another against its token's.
	tok := r.URL.Query().Get("access_token")
	if strings.Contains(r.URL.Query().Get("fields"), "business_discovery") {
		tok = "app"
	}
	f.mu.Lock()
	if f.now == nil {
		f.now = map[string]int{}
	}
	f.now[tok]++
	f.top = max(f.top, f.now[tok])
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now[tok]--
		f.mu.Unlock()
	}()
	f.next.ServeHTTP(w, r)
}

// With many records in flight, a budget whose usage headers say it is near its limit (above
// the gate's SlowFrom, 75%) gets one call at a time: a park or a pause the last answer brings takes effect before
// the next call, as it did when a shard worked one account after another. Far from the limit,
// the calls of one budget go out together.
func TestNearTheLimitOneCallAtATime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		floor   int
		atOnce  bool
		comment string
	}{{90, false, "near the limit"}, {0, true, "far from it"}} {
		var accounts []graphfake.AccountSpec
		for _, u := range []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"} {
			accounts = append(accounts, graphfake.AccountSpec{Username: u, Posts: 10})
		}
		// Business discovery: every call goes through one viewer's token and the app's budget.
		accounts = append(accounts, graphfake.AccountSpec{Username: "viewer", Connected: true, Posts: 1})
		e := newEnv(t, graphfake.Options{Seed: 33, NoFixtureAccounts: true, UsageFloor: c.floor, Latency: 20 * time.Millisecond, Accounts: accounts})
		f := &inFlight{next: e.fake}
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		e.base = srv.URL + "/v23.0"
		e.addAll()
		s := e.syncer(0, 0)
		s.Concurrency = 8
		s.Gate.Sleep = func(ctx context.Context, d time.Duration) error { return nil }
		e.syncAll(s)
		if n := e.count(`SELECT count(*) FROM social_accounts WHERE status = $1`, string(social.Synced)); n != len(accounts) {
			t.Errorf("%s: %d accounts synced, want %d", c.comment, n, len(accounts))
		}
		f.mu.Lock()
		top := f.top
		f.mu.Unlock()
		if (top > 1) != c.atOnce {
			t.Errorf("%s (usage %d%%): at most %d calls of one budget in flight; want them together: %v", c.comment, c.floor, top, c.atOnce)
		}
	}
}

// Accounts worked at once (Syncer.Concurrency) are each handed out once: a run with 8 in
// flight makes the calls and stores the pages a run of one after another does, and moves each
// account through its cycle once.
func TestAccountsInFlightAreWorkedOnce(t *testing.T) {
	t.Parallel()
	run := func(concurrency int) (*env, int) {
		var accounts []graphfake.AccountSpec
		for i := range 16 {
			a := graphfake.AccountSpec{Username: fmt.Sprintf("d%d", i), Posts: 5 + 10*(i%3)}
			if i%4 == 0 {
				a = graphfake.AccountSpec{Username: fmt.Sprintf("c%d", i), Connected: true, Posts: 8, Comments: 20, Stories: 1}
			}
			accounts = append(accounts, a)
		}
		e := newEnv(t, graphfake.Options{Seed: 35, NoFixtureAccounts: true, Latency: 2 * time.Millisecond, Accounts: accounts})
		e.addAll()
		s := e.syncer(0, 0)
		s.Concurrency = concurrency
		e.syncAll(s)
		return e, e.fake.Stats().Requests
	}
	one, oneCalls := run(1)
	many, manyCalls := run(8)
	if manyCalls != oneCalls {
		t.Errorf("%d calls with 8 accounts in flight, %d one after another", manyCalls, oneCalls)
	}
	pages := `SELECT endpoint || ' ' || request FROM social_raw_pages ORDER BY 1`
	if got, want := many.strings(pages), one.strings(pages); !slices.Equal(got, want) {
		t.Errorf("%d pages stored with 8 in flight, %d one after another (or different ones)", len(got), len(want))
	}
	if n := many.count(`SELECT count(*) FROM (SELECT record_id FROM status_history WHERE machine = 'social_accounts' AND to_status = 'posts_pending'
GROUP BY record_id HAVING count(*) > 1) x`); n != 0 {
		t.Errorf("%d accounts had their profile read twice", n)
	}
	if got, want := many.strings(`SELECT status || ' ' || count(*) FROM social_accounts GROUP BY status ORDER BY 1`),
		one.strings(`SELECT status || ' ' || count(*) FROM social_accounts GROUP BY status ORDER BY 1`); !slices.Equal(got, want) {
		t.Errorf("accounts by status with 8 in flight %v, one after another %v", got, want)
	}
}

func (e *env) strings(q string) []string {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, q)
	if err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return out
}
