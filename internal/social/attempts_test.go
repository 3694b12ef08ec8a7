package social_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
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
