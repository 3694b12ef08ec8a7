package graphfake_test

import (
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
)

// Generated accounts are a realistic mix, the same for the same seed, and served on demand: a
// request reaches any of them, and the fake holds a bounded number built however many are
// read.
func TestGeneratedAccounts(t *testing.T) {
	const n = 3000
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f, c := start(t, graphfake.Options{Seed: 5, GeneratedAccounts: n, NoFixtureAccounts: true, Now: clock})
	if got := len(f.Accounts()); got != 0 {
		t.Fatalf("Accounts lists %d accounts, want none: generated ones are listed by Generated", got)
	}

	// The mix: connected and discovery, few and many posts, heavy-tailed comments, every fault.
	var connected, none, few, many, bigComments int
	faults := map[string]int{}
	for i := range n {
		s := f.Generated(i).Spec
		if s.Connected {
			connected++
		}
		switch {
		case s.Posts == 0:
			none++
		case s.Posts < 10:
			few++
		case s.Posts >= 100:
			many++
		}
		if s.Comments >= 1000 {
			bigComments++
		}
		for name, on := range map[string]bool{"token_expired": s.TokenExpired, "age_gated": s.AgeGated, "delete_between_pages": s.DeleteBetweenPages,
			"empty_page_with_next": s.EmptyPageWithNext, "reject_cursor_once": s.RejectCursorOnce, "empty_pages": s.EmptyPages > 0,
			"empty_comment_pages": s.EmptyCommentPages > 0} {
			if on {
				faults[name]++
			}
		}
	}
	t.Logf("connected %d, no posts %d, under 10 %d, 100 or more %d, 1000+ comments %d, faults %v", connected, none, few, many, bigComments, faults)
	if connected < n/5 || connected > n*2/5 {
		t.Errorf("%d connected accounts of %d, want about 3 in 10", connected, n)
	}
	if none == 0 || few < n/4 || many == 0 || many > n/10 || bigComments == 0 {
		t.Errorf("posts and comments are not heavy-tailed: none %d, few %d, many %d, 1000+ comments %d", none, few, many, bigComments)
	}
	total := 0
	for _, k := range []string{"token_expired", "age_gated", "delete_between_pages", "empty_page_with_next", "reject_cursor_once", "empty_pages", "empty_comment_pages"} {
		if faults[k] == 0 {
			t.Errorf("no account with fault %s", k)
		}
		total += faults[k]
	}
	if total > n/20 {
		t.Errorf("%d faulty accounts of %d: not a low rate", total, n)
	}
	if s := f.Generated(0).Spec; !s.Connected || s.TokenExpired {
		t.Errorf("account 0 must be a healthy connected account (the viewer): %+v", s)
	}

	// Deterministic by seed; another seed, other accounts.
	again := graphfake.New(graphfake.Options{Seed: 5, GeneratedAccounts: n, NoFixtureAccounts: true, Now: clock})
	other := graphfake.New(graphfake.Options{Seed: 6, GeneratedAccounts: n, NoFixtureAccounts: true, Now: clock})
	differ := 0
	for _, i := range []int{0, 1, 17, 1234, n - 1} {
		name := graphfake.GeneratedUsername(i)
		a, ok := f.Describe(name)
		b, _ := again.Describe(name)
		if !ok || !reflect.DeepEqual(a, b) {
			t.Errorf("account %d differs between two fakes of one seed", i)
		}
		if o, _ := other.Describe(name); !reflect.DeepEqual(a.Spec, o.Spec) {
			differ++
		}
		if g := f.Generated(i); g.ID != a.ID || g.Token != a.Token || g.Connected != a.Connected {
			t.Errorf("Generated(%d) %+v does not name the account Describe built %+v", i, g, a)
		}
	}
	if differ == 0 {
		t.Error("seeds 5 and 6 generate the same accounts")
	}
	if _, ok := f.Describe(graphfake.GeneratedUsername(n)); ok {
		t.Error("an account past GeneratedAccounts exists")
	}

	// Served on demand: every account's profile by its own token or business discovery, and
	// the fake holds a bounded number built.
	viewer := f.Generated(0)
	for i := range n {
		a := f.Generated(i)
		if a.Connected {
			status, body, _ := c.get(a.ID, url.Values{"access_token": {a.Token}, "fields": {"id,username,media_count"}})
			if a.Spec.TokenExpired {
				if status != 400 || errCode(body) != 190 {
					t.Fatalf("expired token of %s: %d %v", a.Username, status, body)
				}
				continue
			}
			if status != 200 || body["username"] != a.Username || body["media_count"] != float64(a.Spec.Posts) {
				t.Fatalf("profile of %s: %d %v", a.Username, status, body)
			}
			continue
		}
		status, body, _ := c.get(viewer.ID, url.Values{"access_token": {viewer.Token},
			"fields": {"business_discovery.username(" + a.Username + "){id,username,media_count}"}})
		if a.Spec.AgeGated {
			if status != 400 || errCode(body) != 110 {
				t.Fatalf("age-gated %s: %d %v", a.Username, status, body)
			}
			continue
		}
		bd, _ := body["business_discovery"].(map[string]any)
		if status != 200 || bd["id"] != a.ID || bd["media_count"] != float64(a.Spec.Posts) {
			t.Fatalf("business discovery of %s: %d %v", a.Username, status, body)
		}
	}
	if held := f.HeldAccounts(); held > 2100 {
		t.Errorf("the fake holds %d accounts built after reading %d: not bounded", held, n)
	}

	// An account built again after it was dropped is the same: its posts and their comments
	// are reached by id.
	var big graphfake.Account
	for i := 1; i < n; i++ {
		if s := f.Generated(i).Spec; s.Connected && !s.TokenExpired && s.Comments > 50 && !s.DeleteBetweenPages {
			big, _ = f.Describe(s.Username)
			break
		}
	}
	if big.Username == "" {
		t.Fatal("no connected account with comments")
	}
	status, body, _ := c.get(big.Posts[0], url.Values{"access_token": {big.Token}, "fields": {"id,comments_count"}})
	if status != 200 || body["id"] != big.Posts[0] {
		t.Fatalf("post %s of %s: %d %v", big.Posts[0], big.Username, status, body)
	}
	if again, _ := f.Describe(big.Username); !reflect.DeepEqual(again, big) {
		t.Error("the account built again differs")
	}
	if big.MinimumCalls < 3+1 {
		t.Errorf("minimum calls of %s: %d", big.Username, big.MinimumCalls)
	}
	t.Logf("%s: %d posts, %d comments, %d calls at least", big.Username, len(big.Posts), big.Comments, big.MinimumCalls)
}
