package social_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
)

// Captions holding what Postgres cannot store (a NUL as the platform escapes it, a lone
// surrogate escape, bytes that are not UTF-8), on a connected account and on one read through
// business discovery: both accounts sync, every post is stored and normalized with the caption
// cleaned (NUL removed, the rest U+FFFD), the hashtags after the NUL are found, and each post
// is named in the log.
func TestSyncStoresCaptionsPostgresCannotStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 5, Accounts: []graphfake.AccountSpec{
		{Username: "north_coffee", Connected: true, Posts: 30, Comments: 20},
		{Username: "maple.bakery", Posts: 30},
	}})
	captions := map[string]struct {
		raw  string
		want string
	}{}
	for _, a := range e.fake.Accounts() {
		if a.Username != "north_coffee" && a.Username != "maple.bakery" {
			continue
		}
		for i, c := range []struct{ raw, want string }{
			{`"Sunset\u0000 #nulday"`, "Sunset #nulday"},
			{`"Broken \ud800 text #lone"`, "Broken \uFFFD text #lone"},
			{"\"Latin-1 caf\xe9 #bytes\"", "Latin-1 caf\uFFFD #bytes"},
		} {
			id := a.Posts[3+10*i]
			if !e.fake.SetRawCaption(id, json.RawMessage(c.raw)) {
				t.Fatalf("no post %s", id)
			}
			captions[id] = c
		}
	}
	e.addAll()
	s := e.syncer(0, 0)
	e.syncAll(s)

	for _, a := range e.fake.Accounts() {
		if a.Username != "north_coffee" && a.Username != "maple.bakery" {
			continue
		}
		var st string
		if err := e.pool.QueryRow(e.ctx, `SELECT status FROM social_accounts WHERE ig_user_id = $1`, a.ID).Scan(&st); err != nil || st != "synced" {
			t.Errorf("%s: %s (%v), want synced\n%s", a.Username, st, err, e.logs.String())
		}
		got := e.count(`SELECT count(*) FROM social_posts p JOIN social_accounts a ON a.id = p.account_id
WHERE a.ig_user_id = $1 AND p.surface = 'feed' AND p.status = $2`, a.ID, string(social.Normalized))
		if got != len(a.Posts) {
			t.Errorf("%s: %d posts normalized, want %d", a.Username, got, len(a.Posts))
		}
	}
	log := e.logs.String()
	for id, c := range captions {
		var caption string
		if err := e.pool.QueryRow(e.ctx, `SELECT caption FROM social_post_content WHERE ig_media_id = $1`, id).Scan(&caption); err != nil || caption != c.want {
			t.Errorf("post %s: caption %q (%v), want %q", id, caption, err, c.want)
		}
		if !logLine(log, "text Postgres cannot store", id, "caption") {
			t.Errorf("no warn line naming post %s and its caption", id)
		}
	}
	for _, tag := range []string{"nulday", "lone", "bytes"} {
		if n := e.count(`SELECT count(*) FROM social_tags WHERE kind = 'hashtag' AND tag = $1`, tag); n != 2 {
			t.Errorf("hashtag %s found %d times, want 2 (one post of each account)", tag, n)
		}
	}
	if n := e.count(`SELECT count(*) FROM social_raw_pages WHERE strpos(body::text, 'Sunset #nulday') > 0`); n == 0 {
		t.Error("no raw page holds the cleaned caption")
	}
}

// logLine reports whether one line of the log holds every one of parts.
func logLine(log string, parts ...string) bool {
	for line := range strings.Lines(log) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
