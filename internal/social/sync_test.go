package social_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
)

func TestSyncEndToEnd(t *testing.T) {
	t.Parallel()
	// The demo's accounts, smaller: every fault once, listings of two pages.
	e := newEnv(t, graphfake.Options{Seed: 11, Accounts: []graphfake.AccountSpec{
		{Username: "north_coffee", Connected: true, Posts: 110, Comments: 200, Stories: 3, EmptyPageWithNext: true},
		{Username: "studio.lumen", Connected: true, Posts: 105, Comments: 100, Stories: 2, DeleteBetweenPages: true},
		{Username: "expired_brand", Connected: true, Posts: 5, Comments: 10, TokenExpired: true},
		{Username: "harbour_bikes", Posts: 120, RejectCursorOnce: true},
		{Username: "maple.bakery", Posts: 30},
		{Username: "agegated_spirits", Posts: 10, AgeGated: true},
	}})
	e.addAll()
	s := e.syncer(0, 0)
	e.syncAll(s)

	want := map[string]string{
		"north_coffee": "synced", "studio.lumen": "synced", "ikroskun": "synced", "harbour_bikes": "synced",
		"maple.bakery": "synced", "facebookfordevelopers": "synced",
		"expired_brand": "needs_attention", "agegated_spirits": "sync_failed",
	}
	names := map[string]string{}
	for _, a := range e.fake.Accounts() {
		names[a.ID] = a.Username
	}
	rows, err := e.pool.Query(e.ctx, `SELECT coalesce(ig_user_id, username), status, coalesce(last_error, '') FROM social_accounts`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, st, reason string
		if err := rows.Scan(&name, &st, &reason); err != nil {
			t.Fatal(err)
		}
		if n, ok := names[name]; ok {
			name = n
		}
		if want[name] != st {
			t.Errorf("account %s: %s (%s), want %s", name, st, reason, want[name])
		}
		if strings.Contains(reason, "EAAG") {
			t.Errorf("account %s: the reason shows a token: %s", name, reason)
		}
	}
	// Every live post of every readable account, each once; every comment of connected ones.
	for _, a := range e.fake.Accounts() {
		if a.Spec.TokenExpired || a.Spec.AgeGated {
			continue
		}
		got := e.count(`SELECT count(*) FROM social_posts p JOIN social_accounts a ON a.id = p.account_id WHERE a.ig_user_id = $1 AND p.surface = 'feed'`, a.ID)
		if got < len(a.Posts) {
			t.Errorf("%s: %d posts, want %d", a.Username, got, len(a.Posts))
		}
		if a.Connected {
			c := e.count(`SELECT count(*) FROM social_comments c JOIN social_posts p ON p.id = c.post_id JOIN social_accounts a ON a.id = p.account_id
WHERE a.ig_user_id = $1`, a.ID)
			if c != a.Comments {
				t.Errorf("%s: %d comments, want %d", a.Username, c, a.Comments)
			}
			if st := e.count(`SELECT count(*) FROM social_posts p JOIN social_accounts a ON a.id = p.account_id WHERE a.ig_user_id = $1 AND p.surface = 'story'`, a.ID); st != a.Stories {
				t.Errorf("%s: %d stories, want %d", a.Username, st, a.Stories)
			}
		}
	}
	if n := e.count(`SELECT count(*) FROM social_posts WHERE status <> $1`, string(social.Normalized)); n != 0 {
		t.Errorf("%d posts not normalized:\n%s", n, e.logs.String())
	}
	if n := e.count(`SELECT count(*) FROM social_post_content WHERE kind = 'reel' AND media_url_missing`); n == 0 {
		t.Error("no reel without media_url: the copyrighted ones should be")
	}
	if n := e.count(`SELECT count(*) FROM social_comments WHERE parent_comment_id IS NOT NULL`); n == 0 {
		t.Error("no replies")
	}
	if n := e.count(`SELECT count(*) FROM social_tags WHERE kind = 'hashtag'`); n == 0 {
		t.Error("no hashtags")
	}
	if n := e.count(`SELECT count(*) FROM social_post_content WHERE posted_raw NOT LIKE '%+0000' OR posted_at IS NULL`); n != 0 {
		t.Errorf("%d posts without their time as received", n)
	}
	if n := e.count(`SELECT count(*) FROM social_raw_pages WHERE body::text LIKE '%EAAG%'`); n != 0 {
		t.Errorf("%d raw pages hold a token", n)
	}
	if n := e.count(`SELECT count(*) FROM social_accounts WHERE last_error LIKE '%EAAG%' OR token_sealed::text LIKE '%EAAG%'`); n != 0 {
		t.Error("a token is stored in clear")
	}
	if strings.Contains(e.logs.String(), "EAAG") {
		t.Error("the logs show a token")
	}

	// A second pass changes nothing: no account is due, no post waits.
	before := e.fake.Stats().Requests
	e.syncAll(s)
	if after := e.fake.Stats().Requests; after != before {
		t.Errorf("a second pass made %d calls, want 0", after-before)
	}
	_ = time.Second
}
