package social_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
)

// wantWhole checks that every live post, comment and reply of the fake's accounts is stored
// exactly once, every account synced with its high-water mark, every post normalized.
func (e *env) wantWhole(t *testing.T) {
	t.Helper()
	for _, a := range e.fake.Accounts() {
		got := e.count(`SELECT count(*) FROM social_posts p JOIN social_accounts a ON a.id = p.account_id WHERE a.ig_user_id = $1 AND p.surface = 'feed'`, a.ID)
		if got != len(a.Posts) {
			t.Errorf("%s: %d posts, want %d", a.Username, got, len(a.Posts))
		}
		if a.Connected {
			c := e.count(`SELECT count(*) FROM social_comments c JOIN social_posts p ON p.id = c.post_id JOIN social_accounts a ON a.id = p.account_id
WHERE a.ig_user_id = $1`, a.ID)
			if c != a.Comments {
				t.Errorf("%s: %d comments and replies, want %d", a.Username, c, a.Comments)
			}
		}
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status <> $1 OR posts_hwm_at IS NULL OR walk_version <> $2`, string(social.Synced), social.WalkVersion); n != 0 {
		t.Errorf("%d accounts not synced with a high-water mark", n)
	}
	if n := e.count(`SELECT count(*) FROM social_posts WHERE status <> $1`, string(social.Normalized)); n != 0 {
		t.Errorf("%d posts not normalized", n)
	}
}

func TestEmptyPagesAreFollowed(t *testing.T) {
	t.Parallel()
	// Runs of up to four empty pages that hand back the cursor they were asked with, before
	// every page of every list: media, business discovery media, comments and replies.
	e := newEnv(t, graphfake.Options{Seed: 41, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "gaps", Connected: true, Posts: 230, Comments: 900, Stories: 2, EmptyPages: 4, EmptyCommentPages: 4},
		{Username: "dgaps", Posts: 230, EmptyPages: 4},
	}})
	e.addAll()
	e.syncAll(e.syncer(0, 0))
	e.wantWhole(t)
	if n := e.count(`SELECT count(*) FROM social_raw_pages WHERE items = 0 AND has_next AND endpoint IN ('media', 'comments', 'replies')`); n == 0 {
		t.Error("no empty page with next in the raw store: the fake did not misbehave")
	}
}

func TestEmptyPageRunsStopShortAndResume(t *testing.T) {
	t.Parallel()
	// Six empty pages in a row before every page: each walk stops short after five, keeps its
	// cursor, sets no mark, and the next run goes on from there.
	e := newEnv(t, graphfake.Options{Seed: 42, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "gaps", Connected: true, Posts: 150, Comments: 120, EmptyPages: social.MaxEmptyPages + 1, EmptyCommentPages: social.MaxEmptyPages + 1},
		{Username: "dgaps", Posts: 150, EmptyPages: social.MaxEmptyPages + 1},
	}})
	e.addAll()
	s := e.syncer(0, 0)
	if _, err := s.SyncProfiles(e.ctx); err != nil {
		t.Fatal(err)
	}
	st, err := s.SyncPosts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Incomplete != 2 || st.Outcomes["incomplete"] != 2 {
		t.Errorf("first run: %d walks stopped short, outcomes %v; want both listings", st.Incomplete, st.Outcomes)
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE status = $1 AND list_cursor IS NOT NULL AND posts_hwm_at IS NULL AND listed_at IS NULL`, string(social.PostsPending)); n != 2 {
		t.Errorf("%d accounts wait with their cursor and no mark, want 2", n)
	}
	rep, err := social.BuildReport(e.ctx, e.pool, social.ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Accounts {
		if len(a.Incomplete) == 0 {
			t.Errorf("social status: %s not shown as incomplete", a.Username)
		}
	}
	for run := 0; run < 12 && e.count(`SELECT count(*) FROM social_accounts WHERE status <> $1`, string(social.Synced))+
		e.count(`SELECT count(*) FROM social_posts WHERE status <> $1`, string(social.Normalized)) > 0; run++ {
		if run == 0 {
			// Comment walks that stopped short keep their cursor and no comment mark.
			if _, err := s.SyncPosts(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		e.syncAll(s)
		if n := e.count(`SELECT count(*) FROM social_posts WHERE status = $1 AND comments_hwm_at IS NOT NULL`, string(social.CommentsPending)); n != 0 {
			t.Errorf("%d posts waiting for their comments have a comment mark", n)
		}
	}
	e.wantWhole(t)
	if n := e.count(`SELECT count(*) FROM social_posts WHERE status = $1 AND comments_hwm_at IS NULL AND comments_count > 0 AND surface = 'feed'
AND account_id IN (SELECT id FROM social_accounts WHERE access = 'connected')`, string(social.Normalized)); n != 0 {
		t.Errorf("%d posts whose comment walk ended without its mark", n)
	}
}

func TestRepairWalksWhatAnEarlierVersionCutShort(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 43, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "cut", Connected: true, Posts: 250, Comments: 600},
		{Username: "whole", Connected: true, Posts: 20, Comments: 40},
	}})
	e.addAll()
	s := e.syncer(0, 0)
	e.syncAll(s)
	e.wantWhole(t)
	// What an earlier version left: walks recorded under version 0, one account's listing and
	// some posts' comment walks cut short (their rows gone), with their marks set.
	cutID := e.fake.UserID("cut")
	for _, q := range []string{
		`UPDATE social_accounts SET walk_version = 0`,
		`UPDATE social_posts SET walk_version = 0`,
		`DELETE FROM social_tags WHERE post_id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM social_comments WHERE post_id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM social_media_items WHERE post_id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM social_post_counts WHERE post_id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM social_post_content WHERE post_id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM social_enrichments WHERE post_id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM status_history WHERE machine = 'social_posts' AND record_id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM social_posts WHERE id IN (SELECT id FROM social_posts WHERE account_id = (SELECT id FROM social_accounts WHERE ig_user_id = '` + cutID + `') ORDER BY taken_at LIMIT 100)`,
		`DELETE FROM social_comments WHERE ig_comment_id IN (SELECT c.ig_comment_id FROM social_comments c JOIN social_posts p ON p.id = c.post_id
  JOIN social_accounts a ON a.id = p.account_id WHERE a.ig_user_id = '` + cutID + `' AND c.parent_comment_id IS NOT NULL)`,
	} {
		if _, err := e.pool.Exec(e.ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	short := e.count(`SELECT count(DISTINCT c.post_id) FROM social_comments c JOIN social_posts p ON p.id = c.post_id JOIN social_accounts a ON a.id = p.account_id
WHERE a.ig_user_id = $1`, cutID)
	rs, err := s.Repair(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Accounts != 1 || rs.Posts == 0 || rs.Posts > short {
		t.Errorf("repair found %d accounts and %d posts, want 1 and some (at most %d)", rs.Accounts, rs.Posts, short)
	}
	rep, err := social.BuildReport(e.ctx, e.pool, social.ReportOptions{Account: "cut"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Accounts) != 1 || len(rep.Accounts[0].Incomplete) == 0 {
		t.Errorf("social status does not show the cut account as incomplete: %+v", rep.Accounts)
	}
	// The next sync walks them again in full (the repaired account is due at once), and the
	// repair happens once.
	e.syncAll(s)
	e.wantWhole(t)
	before := e.fake.Stats().Requests
	rs, err = s.Repair(e.ctx)
	if err != nil || rs.Accounts+rs.Posts != 0 {
		t.Errorf("a second repair scan found %+v (%v), want nothing", rs, err)
	}
	e.syncAll(s)
	if after := e.fake.Stats().Requests; after != before {
		t.Errorf("a sync after the repair made %d calls, want 0", after-before)
	}
}
