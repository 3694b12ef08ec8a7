package social_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/status"
)

// The status report counts the records of each status by reason code, and `show` gives an
// account's and a post's code beside its last error: a profile read and a comment walk whose
// process died are found as attempt_unfinished, a failure without a code is not counted as one.
func TestReportShowsReasonCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 25, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "c_codes", Connected: true, Posts: 2, Comments: 4},
	}})
	e.addAll()
	s := e.syncer(0, 0)
	e.syncAll(s)
	// Retries an hour apart: a counted death is not read again by the same call.
	s.RetryPolicy = retry.Policy{Delays: []time.Duration{time.Hour, time.Hour}}
	var account, post, other int64
	if err := e.pool.QueryRow(e.ctx, `SELECT (SELECT id FROM social_accounts), min(id), max(id) FROM social_posts`).Scan(&account, &post, &other); err != nil || post == other {
		t.Fatalf("want an account and two posts: %v", err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_posts SET status = 'comments_pending' WHERE id = $1`, post); err != nil {
		t.Fatal(err)
	}
	// A failure recorded before reason codes were kept: its status, its error, no code.
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_posts SET status = 'comments_retry', last_error = 'HTTP 500', next_attempt_at = now() + interval '1 hour' WHERE id = $1`, other); err != nil {
		t.Fatal(err)
	}
	if ok, err := social.Posts.StartAttempt(e.ctx, e.pool, post, social.CommentsPending, 0); err != nil || !ok {
		t.Fatalf("start post %d: %v %v", post, ok, err)
	}
	if st, err := s.SyncComments(e.ctx); err != nil || st.Unfinished != 1 {
		t.Fatalf("comments: %+v, %v; want the death counted", st, err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE social_accounts SET status = 'profile_pending'`); err != nil {
		t.Fatal(err)
	}
	if ok, err := social.Accounts.StartAttempt(e.ctx, e.pool, account, social.ProfilePending, 0); err != nil || !ok {
		t.Fatalf("start account %d: %v %v", account, ok, err)
	}
	if st, err := s.SyncProfiles(e.ctx); err != nil || st.Unfinished != 1 {
		t.Fatalf("profiles: %+v, %v; want the death counted", st, err)
	}

	rep, err := social.BuildReport(e.ctx, e.pool, social.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []status.CodeTally{{Code: status.AttemptUnfinished, Count: 1}}
	for _, w := range []struct {
		machine, status string
		count           int64
		codes           []status.CodeTally
	}{
		{social.Accounts.Name, string(social.SyncRetry), 1, want},
		{social.Posts.Name, string(social.CommentsRetry), 2, want},
		{social.Posts.Name, string(social.Normalized), 0, nil},
	} {
		i := slices.IndexFunc(rep.Counts, func(c social.MachineCount) bool { return c.Machine == w.machine && c.Status == w.status })
		if i < 0 || rep.Counts[i].Count != w.count || !slices.Equal(rep.Counts[i].Codes, w.codes) {
			t.Errorf("%s %s: %+v; want %d with codes %v", w.machine, w.status, rep.Counts, w.count, w.codes)
		}
	}
	if len(rep.Accounts) != 1 || rep.Accounts[0].ReasonCode != status.AttemptUnfinished {
		t.Errorf("account lines: %+v; want its code", rep.Accounts)
	}
	acc, err := social.ShowAccount(e.ctx, e.pool, "c_codes")
	if err != nil || acc.ReasonCode != status.AttemptUnfinished || acc.LastError == "" {
		t.Errorf("show account: code %q, last error %q, %v", acc.ReasonCode, acc.LastError, err)
	}
	for id, code := range map[int64]string{post: status.AttemptUnfinished, other: ""} {
		var media string
		if err := e.pool.QueryRow(e.ctx, `SELECT ig_media_id FROM social_posts WHERE id = $1`, id).Scan(&media); err != nil {
			t.Fatal(err)
		}
		d, err := social.ShowPost(e.ctx, e.pool, media)
		if err != nil || d.ReasonCode != code || d.LastError == "" {
			t.Errorf("show post %d: code %q, last error %q, %v; want code %q", id, d.ReasonCode, d.LastError, err, code)
		}
	}
}
