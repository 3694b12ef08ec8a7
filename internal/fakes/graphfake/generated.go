package graphfake

import (
	"container/list"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Generated accounts (Options.GeneratedAccounts) are described by their index alone: the
// index is in the username, the IG user id, the token and every media and comment id, and an
// account's spec and data come from a generator seeded with Options.Seed and the index. So an
// account is built when a request first names it and dropped again when too many are held
// (genCacheSize): a million accounts cost what the ones being read cost, and the same account
// built twice is the same account.
const (
	genUserPrefix    = "1784149" // + 11 digits: the index
	genMediaPrefix   = "1799"    // + 7 digits of index + 7 of counter
	genCommentPrefix = "1789"
	genTokenPrefix   = "EAAGgen"
	genUserPrefixLen = len(genUserPrefix)
	// MaxGeneratedAccounts is the most generated accounts the ids have room for.
	MaxGeneratedAccounts = 10_000_000
	// genCacheSize is how many generated accounts are held built at once.
	genCacheSize = 2048
)

// genCache holds the generated accounts built so far, least recently used last.
type genCache struct {
	lru    *list.List
	byIdx  map[int]*list.Element
	pinned map[int]*account // accounts whose data changed (AddPost): kept built
	// faults is what the once-only faults of dropped accounts did (DeleteBetweenPages,
	// RejectCursorOnce), applied when they are built again: a few bytes an account where
	// keeping the account built would hold all its posts.
	faults map[int]faultState
}

// faultState is what an account's once-only faults did.
type faultState struct {
	servedFirstPage, rejectedCursor bool
	deleted                         []string // media ids
}

// GeneratedUsername is the username of generated account i.
func GeneratedUsername(i int) string { return fmt.Sprintf("gen%07d", i) }

func genUserID(i int) string { return fmt.Sprintf("%s%011d", genUserPrefix, i) }

func genToken(i int) string { return fmt.Sprintf("%s%07dToken", genTokenPrefix, i) }

// GeneratedSpec is the spec of generated account i of seed: a realistic mix. About three in
// ten accounts are connected (the app holds their token: comments and stories), the others
// are read through business discovery. Posts follow a Pareto law (median about 10, a tail to
// 1,000; a few accounts have none); comments per post another, heavier one (most posts have
// none or a few, a few accounts have thousands). Each fault kind touches about one account in
// a hundred. Account 0 is always a healthy connected account: the import makes the oldest
// connected account the viewer of the business discovery accounts.
func GeneratedSpec(seed uint64, i int) AccountSpec {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b9+uint64(i)))
	s := AccountSpec{Username: GeneratedUsername(i), Connected: i == 0 || r.IntN(10) < 3}
	if r.IntN(100) >= 3 || i == 0 {
		s.Posts = min(1000, int(5*math.Pow(1-r.Float64(), -1/1.1)))
	}
	if s.Connected {
		perPost := 0.6*math.Pow(1-r.Float64(), -1/1.2) - 0.6
		s.Comments = min(20_000, int(float64(s.Posts)*perPost))
		s.Stories = r.IntN(4)
	}
	if i == 0 {
		return s
	}
	fault := r.IntN(1000)
	switch {
	case s.Connected && fault < 10:
		s.TokenExpired = true
	case s.Connected && fault < 20:
		s.EmptyPageWithNext = true
	case s.Connected && fault < 30:
		s.DeleteBetweenPages = true
	case s.Connected && fault < 35:
		s.EmptyCommentPages = 1
	case !s.Connected && fault < 10:
		s.AgeGated = true
	case !s.Connected && fault < 20:
		s.RejectCursorOnce = true
	case !s.Connected && fault < 25:
		s.EmptyPages = 1
	}
	return s
}

// genIndex finds the generated account an id, username or token names, or -1.
func (s *Server) genIndex(prefix, key string, digits int) int {
	if s.opts.GeneratedAccounts <= 0 || !strings.HasPrefix(key, prefix) || len(key) < len(prefix)+digits {
		return -1
	}
	i, err := strconv.Atoi(key[len(prefix) : len(prefix)+digits])
	if err != nil || i < 0 || i >= s.opts.GeneratedAccounts {
		return -1
	}
	return i
}

// generated returns generated account i, built now if it is not held.
func (s *Server) generated(i int) *account {
	c := s.gen
	if a := c.pinned[i]; a != nil {
		return a
	}
	if e := c.byIdx[i]; e != nil {
		c.lru.MoveToFront(e)
		return e.Value.(*account)
	}
	spec := GeneratedSpec(s.opts.Seed, i)
	rng := rand.New(rand.NewPCG(s.opts.Seed, 0x5bd1e995+uint64(i)))
	a := &account{id: genUserID(i), username: spec.Username, connected: spec.Connected, spec: spec, isGen: true, genIndex: i,
		name: "Gen " + strconv.Itoa(i), bio: "Made by hand. " + caption(rng), website: "https://" + spec.Username + ".example",
		followers: 100 + rng.IntN(200_000), follows: 10 + rng.IntN(2000)}
	if spec.Connected {
		a.token = genToken(i)
	}
	generate(rng, &genIDs{index: i}, a, s.genEpoch)
	if f, ok := c.faults[i]; ok {
		a.servedFirstPage, a.rejectedCursor = f.servedFirstPage, f.rejectedCursor
		for _, m := range a.media {
			m.deleted = slices.Contains(f.deleted, m.id)
		}
	}
	s.add(a)
	c.byIdx[i] = c.lru.PushFront(a)
	for c.lru.Len() > genCacheSize {
		old := c.lru.Remove(c.lru.Back()).(*account)
		delete(c.byIdx, old.genIndex)
		if old.spec.DeleteBetweenPages || old.spec.RejectCursorOnce {
			f := faultState{servedFirstPage: old.servedFirstPage, rejectedCursor: old.rejectedCursor}
			for _, m := range old.media {
				if m.deleted {
					f.deleted = append(f.deleted, m.id)
				}
			}
			c.faults[old.genIndex] = f
		}
		s.drop(old)
	}
	return a
}

// pin keeps a generated account built from now on (its data changed: AddPost).
func (s *Server) pin(a *account) {
	if !a.isGen || s.gen.pinned[a.genIndex] != nil {
		return
	}
	if e := s.gen.byIdx[a.genIndex]; e != nil {
		s.gen.lru.Remove(e)
		delete(s.gen.byIdx, a.genIndex)
	}
	s.gen.pinned[a.genIndex] = a
}

// drop forgets a generated account's indexes (the reverse of add, but for the order).
func (s *Server) drop(a *account) {
	delete(s.accounts, a.id)
	delete(s.byUsername, strings.ToLower(a.username))
	if a.token != "" {
		delete(s.byToken, a.token)
	}
	unindex := func(m *media) {
		delete(s.media, m.id)
		for _, c := range m.comments {
			delete(s.comments, c.id)
			for _, r := range c.replies {
				delete(s.comments, r.id)
			}
		}
	}
	for _, m := range append(a.media, a.stories...) {
		unindex(m)
		for _, c := range m.children {
			unindex(c)
		}
	}
}

// The lookups: held accounts first, then the generated account the key names.

func (s *Server) accountByID(id string) *account {
	if a := s.accounts[id]; a != nil {
		return a
	}
	if i := s.genIndex(genUserPrefix, id, 11); i >= 0 && len(id) == genUserPrefixLen+11 {
		return s.generated(i)
	}
	return nil
}

func (s *Server) accountByUsername(name string) *account {
	if a := s.byUsername[strings.ToLower(name)]; a != nil {
		return a
	}
	if i := s.genIndex("gen", strings.ToLower(name), 7); i >= 0 && len(name) == 10 {
		return s.generated(i)
	}
	return nil
}

func (s *Server) accountByToken(token string) *account {
	if a := s.byToken[token]; a != nil {
		return a
	}
	if i := s.genIndex(genTokenPrefix, token, 7); i >= 0 && token == genToken(i) {
		return s.generated(i)
	}
	return nil
}

func (s *Server) mediaByID(id string) *media {
	if m := s.media[id]; m != nil {
		return m
	}
	if i := s.genIndex(genMediaPrefix, id, 7); i >= 0 && len(id) == 18 {
		s.generated(i)
	}
	return s.media[id]
}

func (s *Server) commentByID(id string) *comment {
	if c := s.comments[id]; c != nil {
		return c
	}
	if i := s.genIndex(genCommentPrefix, id, 7); i >= 0 && len(id) == 18 {
		s.generated(i)
	}
	return s.comments[id]
}

// genIDs hands out the ids of generated account index: its index, then a counter.
type genIDs struct {
	index int
	next  uint64
}

func (g *genIDs) media() string {
	g.next++
	return fmt.Sprintf("%s%07d%07d", genMediaPrefix, g.index, g.next)
}

func (g *genIDs) comment() string {
	g.next++
	return fmt.Sprintf("%s%07d%07d", genCommentPrefix, g.index, g.next)
}

// GeneratedAccounts is how many generated accounts the fake serves.
func (s *Server) GeneratedAccounts() int { return s.opts.GeneratedAccounts }

// Generated describes generated account i without building its data: its username, id,
// token (connected only) and spec. It is cheap enough to list a million.
func (s *Server) Generated(i int) Account {
	spec := GeneratedSpec(s.opts.Seed, i)
	a := Account{Username: spec.Username, ID: genUserID(i), Connected: spec.Connected, Spec: spec}
	if spec.Connected {
		a.Token = genToken(i)
	}
	return a
}

// Describe describes one account by username (a generated one too), with its posts, comments
// and the fewest calls that read it; ok is false for an unknown username.
func (s *Server) Describe(username string) (Account, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accountByUsername(username)
	if a == nil {
		return Account{}, false
	}
	return s.describe(a), true
}

// describe is Describe with the lock held.
func (s *Server) describe(a *account) Account {
	x := Account{Username: a.username, ID: a.id, Token: a.token, Connected: a.connected, Spec: a.spec}
	for _, m := range live(a.media) {
		x.Posts = append(x.Posts, m.id)
		x.Comments += m.commentsCount()
	}
	for _, m := range a.stories {
		if s.now().Sub(m.ts) <= storyLife {
			x.Stories++
		}
	}
	x.MinimumCalls = minimumCalls(a)
	return x
}

// Page sizes of the fake: the most each list answers at once, and the replies a comment
// inlines (the platform's default page of 25).
const (
	maxMediaPage   = 100
	maxCommentPage = 50
	inlineReplies  = 25
)

// minimumCalls is the fewest requests that read all of an account once, at the largest pages
// the fake answers: its profile; its media pages (one at least, to learn there are none); for
// a connected account its stories, and per post with comments its comment pages (replies
// inline) and the reply pages past the inlined ones. A token that answers 190, or an account
// business discovery cannot read, takes one call: the one that finds out.
func minimumCalls(a *account) int {
	if a.spec.TokenExpired || a.spec.AgeGated {
		return 1
	}
	ceil := func(n, d int) int { return (n + d - 1) / d }
	ms := live(a.media)
	n := 1 + max(1, ceil(len(ms), maxMediaPage))
	if !a.connected {
		return n
	}
	n++ // stories
	for _, m := range ms {
		if len(m.comments) == 0 {
			continue
		}
		n += ceil(len(m.comments), maxCommentPage)
		for _, c := range m.comments {
			if len(c.replies) > inlineReplies {
				n += ceil(len(c.replies)-inlineReplies, maxCommentPage)
			}
		}
	}
	return n
}

// genEpochOf is the clock generated data is built against: fixed when the fake starts, so an
// account built again later has the same posts at the same times.
func genEpochOf(now time.Time) time.Time { return now.Truncate(time.Second) }

// HeldAccounts is how many generated accounts are built at the moment: the fake's memory grows
// with it, not with GeneratedAccounts.
func (s *Server) HeldAccounts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen.lru.Len() + len(s.gen.pinned)
}
