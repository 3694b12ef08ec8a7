package social_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/status"
)

// A process killed during a profile read or a comment walk leaves the attempt open, as this test
// does by hand: the next sync counts it as a failed attempt and then syncs the record (the retry
// is due at once here); an open attempt of another shard, whose run may be alive, is left alone;
// and runs that end normally or are stopped leave no attempt open.
func TestSyncCountsAttemptsThatNeverFinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 23, Accounts: []graphfake.AccountSpec{
		{Username: "c_one", Connected: true, Posts: 4, Comments: 12},
		{Username: "c_two", Connected: true, Posts: 3, Comments: 6},
	}})
	e.addAll()
	var ids []int64
	rows, err := e.pool.Query(e.ctx, `SELECT id FROM social_accounts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) < 2 || ids[0]%2 == ids[1]%2 {
		t.Fatalf("account ids %v: want the first two in two shards", ids)
	}
	ids = ids[:2]
	for _, id := range ids {
		if ok, err := social.Accounts.StartAttempt(e.ctx, e.pool, id, social.ProfilePending, 0); err != nil || !ok {
			t.Fatalf("start %d: %v %v", id, ok, err)
		}
	}
	mine, other := ids[0], ids[1]
	shard := int(mine % 2)
	s := e.syncer(shard, 2)
	st, err := s.SyncProfiles(e.ctx)
	if err != nil || st.Unfinished != 1 {
		t.Fatalf("profiles of shard %d: %+v, %v; want one unfinished attempt counted", shard, st, err)
	}
	if got := e.count(`SELECT count(*) FROM social_accounts WHERE id = $1 AND attempt_started_at IS NOT NULL AND status = 'profile_pending'`, other); got != 1 {
		t.Error("the other shard's open attempt was touched")
	}
	hist, err := social.Accounts.History(e.ctx, e.pool, mine)
	if err != nil || len(hist) != 2 || hist[0].To != social.SyncRetry || !strings.Contains(hist[0].Reason, "never finished: the process died") ||
		hist[1].To != social.PostsPending {
		t.Fatalf("history of account %d: %+v, %v; want the death counted, then the profile read", mine, hist, err)
	}

	e.syncAll(e.syncer(0, 0))
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status <> 'synced'`); n != 0 {
		t.Fatalf("%d accounts not synced", n)
	}
	// A comment walk killed: the post is walked again by the next comment sync.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_posts SET status = 'comments_pending' WHERE id = (SELECT min(id) FROM social_posts WHERE comments_count > 0)`); err != nil {
		t.Fatal(err)
	}
	var post int64
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM social_posts WHERE status = 'comments_pending'`).Scan(&post); err != nil {
		t.Fatal(err)
	}
	if ok, err := social.Posts.StartAttempt(e.ctx, e.pool, post, social.CommentsPending, 0); err != nil || !ok {
		t.Fatalf("start post %d: %v %v", post, ok, err)
	}
	st, err = e.syncer(0, 0).SyncComments(e.ctx)
	if err != nil || st.Unfinished != 1 || st.Outcomes[string(social.Fetched)] != 1 {
		t.Fatalf("comments: %+v, %v; want the death counted and the post walked", st, err)
	}
	ph, err := social.Posts.History(e.ctx, e.pool, post)
	if err != nil || len(ph) < 2 || ph[len(ph)-2].To != social.CommentsRetry || !strings.Contains(ph[len(ph)-2].Reason, "never finished") ||
		ph[len(ph)-1].To != social.Fetched {
		t.Errorf("history of post %d: %+v, %v; want the death counted, then the walk", post, ph, err)
	}

	// A stopped run ends its attempts unrecorded.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_accounts SET status = 'profile_pending'`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.syncer(0, 0).SyncProfiles(ctx); err == nil {
		t.Error("a stopped sync reported no error")
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE attempt_started_at IS NOT NULL`) +
		e.count(`SELECT count(*) FROM social_posts WHERE attempt_started_at IS NOT NULL`); n != 0 {
		t.Errorf("%d attempts left open", n)
	}
	if n := e.count(`SELECT count(*) FROM status_history WHERE machine = $1 AND reason LIKE '%never finished%'`, social.Accounts.Name); n != 2 {
		t.Errorf("%d deaths of accounts counted, want 2: the other shard's by the unsharded sync", n)
	}
}

// An account or a post whose process dies in every attempt (a poison profile, a listing that
// runs it out of memory) is given up on once its retries are used, with the code
// attempt_unfinished, instead of being retried by every run. Each death is left here as the
// process leaves it, an attempt started and never finished, before the next run; the retries are
// an hour apart, so no run reads the record itself.
func TestRecordThatAlwaysKillsTheProcessEndsFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 24, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "c_poison", Connected: true, Posts: 3, Comments: 9},
	}})
	e.addAll()
	s := e.syncer(0, 0)
	s.RetryPolicy = retry.Policy{Delays: []time.Duration{time.Hour, time.Hour}}
	type rec struct {
		m    *status.Machine
		sync func(context.Context) (social.Stats, error)
		id   int64
	}
	die := func(r rec, want status.Status) {
		t.Helper()
		cur, err := r.m.Current(e.ctx, e.pool, r.id)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := r.m.StartAttempt(e.ctx, e.pool, r.id, cur, 0); err != nil || !ok {
			t.Fatalf("start %s %d in %s: %v %v", r.m.Name, r.id, cur, ok, err)
		}
		st, err := r.sync(e.ctx)
		if err != nil || st.Unfinished != 1 {
			t.Fatalf("%s: %+v, %v; want the death counted", r.m.Name, st, err)
		}
		if got, _ := r.m.Current(e.ctx, e.pool, r.id); got != want {
			t.Fatalf("%s %d after a death: %s, want %s", r.m.Name, r.id, got, want)
		}
		// The retry is due: the next run picks the record, and its process dies again.
		if _, err := e.pool.Exec(e.ctx, `UPDATE `+r.m.Table+` SET next_attempt_at = now() WHERE id = $1`, r.id); err != nil {
			t.Fatal(err)
		}
	}
	wantGivenUp := func(r rec) {
		t.Helper()
		var lastErr, code string
		if err := e.pool.QueryRow(e.ctx, `SELECT last_error, coalesce(reason_code, '') FROM `+r.m.Table+` WHERE id = $1`, r.id).Scan(&lastErr, &code); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(lastErr, "gave up after 3 attempts") || !strings.Contains(lastErr, "never finished: the process died") ||
			code != status.AttemptUnfinished {
			t.Errorf("%s %d: last_error %q, code %q; want given up after the deaths, with code %s", r.m.Name, r.id, lastErr, code, status.AttemptUnfinished)
		}
	}

	var account int64
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM social_accounts`).Scan(&account); err != nil {
		t.Fatal(err)
	}
	acc := rec{social.Accounts, s.SyncProfiles, account}
	die(acc, social.SyncRetry)
	die(acc, social.SyncRetry)
	die(acc, social.SyncFailed)
	wantGivenUp(acc)

	// A post: the account is read, then every walk of the post's comments kills the process.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_accounts SET status = 'profile_pending'`); err != nil {
		t.Fatal(err)
	}
	e.syncAll(s)
	var post int64
	if err := e.pool.QueryRow(e.ctx, `SELECT min(id) FROM social_posts WHERE comments_count > 0`).Scan(&post); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_posts SET status = 'comments_pending' WHERE id = $1`, post); err != nil {
		t.Fatal(err)
	}
	p := rec{social.Posts, s.SyncComments, post}
	die(p, social.CommentsRetry)
	die(p, social.CommentsRetry)
	die(p, social.CommentsFailed)
	wantGivenUp(p)
	// A later success clears the code with the error.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_posts SET status = 'comments_pending' WHERE id = $1`, post); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SyncComments(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM social_posts WHERE id = $1 AND status = 'fetched' AND reason_code IS NULL`, post); n != 1 {
		t.Error("the walked post kept its reason code")
	}
}
