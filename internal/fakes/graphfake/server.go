// Package graphfake is a fake Instagram Graph API (Instagram Platform) for tests, benchmarks and
// the demo: a real HTTP server holding generated professional accounts (plus two built from the
// real responses in internal/fakes/fixtures/social), answering the endpoints the social-sync
// pipeline uses with field expansion, cursor paging and the error envelope, and misbehaving the
// way the platform does:
//
//   - throttling answers with HTTP 400, per budget as Meta documents it: business discovery
//     counts against the app's Platform Rate Limits (codes 4, 17, 32, 613, X-App-Usage), a
//     connected account's calls against its token's Business Use Case budget (80002, 80001,
//     X-Business-Use-Case-Usage); a throttled budget stays throttled for a while; usage headers
//     on every answer, near 100% on demand;
//   - cursors refused once used after InvalidateCursors, after their post was deleted, or once
//     by choice (RejectCursorOnce); an empty page that still has next (EmptyPageWithNext); a
//     post deleted between two pages (DeleteBetweenPages); runs of empty pages that hand back
//     the cursor they were asked with, with a next link, on media, comment and reply lists
//     (EmptyPages, EmptyCommentPages);
//   - media_url omitted for media with copyrighted audio; like_count omitted through business
//     discovery when the owner hides likes; CDN URLs whose signed parameters change on every call;
//   - an expired token (code 190), an age-gated account that business discovery cannot read
//     (code 110 / 2207013), business_discovery media paged by after cursors without next.
package graphfake

import (
	"container/list"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// storyLife is how long a story is listed.
const storyLife = 24 * time.Hour

// AccountSpec describes one generated account.
type AccountSpec struct {
	Username  string
	Connected bool // the app holds its token: media, comments, stories; else business discovery only
	Posts     int  // feed posts and reels
	Comments  int  // comments and replies over all its posts
	Stories   int  // live stories (connected only)
	// Faults.
	TokenExpired       bool // its token answers code 190
	AgeGated           bool // business discovery answers 110/2207013
	DeleteBetweenPages bool // the last post of the first media page is deleted once that page is served
	EmptyPageWithNext  bool // every second media page is first served empty, with next
	// EmptyPages and EmptyCommentPages: every page of its media lists (and of its posts'
	// comment and reply lists) is first served empty this many times, handing back the cursor
	// it was asked with and a next link (Meta: "a page may be empty but contain a next link").
	EmptyPages, EmptyCommentPages int
	RejectCursorOnce              bool // the first media request with a cursor is refused (code 100)
}

// Options configure the fake.
type Options struct {
	// Seed makes the generated data reproducible.
	Seed uint64
	// Accounts are the generated accounts; none means DemoAccounts (none at all when
	// GeneratedAccounts is set).
	Accounts []AccountSpec
	// GeneratedAccounts adds that many accounts generated from Seed (GeneratedSpec: a realistic
	// mix of connected and business discovery accounts, sizes and faults), built when a request
	// names them and dropped when too many are held, so that 10^6 cost no more memory than 10^3.
	// They are not listed by Accounts: see Generated and Describe.
	GeneratedAccounts int
	// NoFixtureAccounts leaves out the two accounts built from the fixtures.
	NoFixtureAccounts bool
	// Latency is added to every answer (a real answer takes 100-500 ms).
	Latency time.Duration
	// ThrottleEvery, when positive, answers every Nth request with a throttling error, rotating
	// through the codes of the request's budget: the app's Platform Rate Limits (4, 17, 32, 613)
	// for business discovery, the token's Business Use Case budget (80002, 80001) for a connected
	// account; that budget then stays throttled for ThrottleFor.
	ThrottleEvery int
	// ThrottleFor is how long a throttled token or app keeps being refused (default 1 minute).
	ThrottleFor time.Duration
	// RegainMinutes is the estimated_time_to_regain_access the usage header gives while throttled.
	RegainMinutes int
	// UsageFloor is added to every usage percentage (90 puts every header near the limit);
	// AppUsageFloor to X-App-Usage only (business discovery answers), BusinessUsageFloor to
	// X-Business-Use-Case-Usage only (connected accounts' answers).
	UsageFloor, AppUsageFloor, BusinessUsageFloor int
	// CallsPerHour is the app's (and each token's) hourly budget behind the usage percentages
	// (default 4800).
	CallsPerHour int
	// AppCallsPerHour, when positive, is the app's hourly budget (business discovery) instead of
	// CallsPerHour. With generated accounts it defaults to Meta's Platform Rate Limit: 200 calls
	// an hour per app user (each connected account), at least CallsPerHour.
	AppCallsPerHour int
	// Now is the fake's clock (default time.Now); the data is generated before its first value.
	Now func() time.Time
}

// DemoAccounts are the accounts of the demo: connected brands with comments and stories, brands
// read through business discovery, and one of each fault.
func DemoAccounts() []AccountSpec {
	return []AccountSpec{
		{Username: "north_coffee", Connected: true, Posts: 150, Comments: 900, Stories: 3, EmptyPageWithNext: true},
		{Username: "studio.lumen", Connected: true, Posts: 120, Comments: 400, Stories: 2, DeleteBetweenPages: true},
		{Username: "expired_brand", Connected: true, Posts: 5, Comments: 10, TokenExpired: true},
		{Username: "harbour_bikes", Posts: 260, RejectCursorOnce: true},
		{Username: "maple.bakery", Posts: 30},
		{Username: "agegated_spirits", Posts: 10, AgeGated: true},
	}
}

// Stats counts what the fake answered.
type Stats struct {
	Requests   int
	ByEndpoint map[string]int
	Throttled  int // throttling answers sent
	// WhileThrottled counts requests that arrived while their token or app was throttled: a
	// client that parks as told sends none.
	WhileThrottled int
}

// Server is the fake. It is safe for concurrent use.
type Server struct {
	mu         sync.Mutex
	opts       Options
	accounts   map[string]*account // by id
	byUsername map[string]*account // lower-case
	byToken    map[string]*account
	media      map[string]*media
	comments   map[string]*comment
	order      []*account
	epoch      int
	rng        *rand.Rand
	stats      Stats
	throttled  map[string]time.Time // "app" or "token:<id>" -> until
	calls      map[string][]time.Time
	empties    map[string]int // empty answers served per list position (EmptyPages)
	gen        genCache
	genEpoch   time.Time // the clock generated accounts are built against
}

// New builds the fake and its data.
func New(o Options) *Server {
	if o.Accounts == nil && o.GeneratedAccounts <= 0 {
		o.Accounts = DemoAccounts()
	}
	o.GeneratedAccounts = min(max(o.GeneratedAccounts, 0), MaxGeneratedAccounts)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ThrottleFor <= 0 {
		o.ThrottleFor = time.Minute
	}
	if o.CallsPerHour <= 0 {
		o.CallsPerHour = 4800
	}
	if o.AppCallsPerHour <= 0 {
		o.AppCallsPerHour = o.CallsPerHour
		if o.GeneratedAccounts > 0 {
			o.AppCallsPerHour = max(o.CallsPerHour, 200*o.GeneratedAccounts*3/10)
		}
	}
	s := &Server{opts: o, accounts: map[string]*account{}, byUsername: map[string]*account{}, byToken: map[string]*account{},
		media: map[string]*media{}, comments: map[string]*comment{}, rng: rand.New(rand.NewPCG(o.Seed, 7)),
		throttled: map[string]time.Time{}, calls: map[string][]time.Time{}, empties: map[string]int{}, stats: Stats{ByEndpoint: map[string]int{}}}
	gen := rand.New(rand.NewPCG(o.Seed, 1))
	g := &ids{next: 1_000_000 + o.Seed%1000*1_000_000}
	now := o.Now()
	s.genEpoch = genEpochOf(now)
	s.gen = genCache{lru: list.New(), byIdx: map[int]*list.Element{}, pinned: map[int]*account{}, faults: map[int]faultState{}}
	if !o.NoFixtureAccounts {
		for _, a := range fixtureAccounts(now) {
			s.add(a)
		}
	}
	for _, spec := range o.Accounts {
		a := &account{id: g.user(), username: spec.Username, connected: spec.Connected, spec: spec,
			name: strings.ToUpper(spec.Username[:1]) + strings.ReplaceAll(spec.Username[1:], "_", " "),
			bio:  "Made by hand. " + caption(gen), website: "https://" + strings.ReplaceAll(spec.Username, "_", "") + ".example",
			followers: 1000 + gen.IntN(90000), follows: 50 + gen.IntN(900)}
		if spec.Connected {
			a.token = "EAAG" + strings.ReplaceAll(spec.Username, ".", "") + "Token"
		}
		generate(gen, g, a, now)
		s.add(a)
	}
	return s
}

func (s *Server) add(a *account) {
	s.accounts[a.id] = a
	s.byUsername[strings.ToLower(a.username)] = a
	if a.token != "" {
		s.byToken[a.token] = a
	}
	if !a.isGen {
		s.order = append(s.order, a)
	}
	index := func(m *media) {
		s.media[m.id] = m
		for _, c := range m.comments {
			s.comments[c.id] = c
			for _, r := range c.replies {
				s.comments[r.id] = r
			}
		}
	}
	for _, m := range append(a.media, a.stories...) {
		m.owner = a
		index(m)
		for _, c := range m.children {
			c.owner = a
			index(c)
		}
	}
}

func (s *Server) now() time.Time { return s.opts.Now() }

// Token is the access token of a connected account ("" for others).
func (s *Server) Token(username string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.accountByUsername(username); a != nil {
		return a.token
	}
	return ""
}

// UserID is an account's IG user id.
func (s *Server) UserID(username string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.accountByUsername(username); a != nil {
		return a.id
	}
	return ""
}

// Account describes what the fake holds for one account, for tests to compare with.
type Account struct {
	Username, ID, Token string
	Connected           bool
	Posts               []string // live feed media ids, newest first
	Comments            int      // comments and replies on those posts
	Stories             int      // live stories
	Spec                AccountSpec
	// MinimumCalls is the fewest requests that read the account once (Describe only).
	MinimumCalls int
}

// Accounts lists every account but the generated ones, fixture accounts first.
func (s *Server) Accounts() []Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Account
	for _, a := range s.order {
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
		out = append(out, x)
	}
	return out
}

// InvalidateCursors makes every cursor handed out so far invalid (the platform's "cursors can
// quickly become invalid").
func (s *Server) InvalidateCursors() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
}

// AddPost publishes a new post with n comments on an account, newest of all.
func (s *Server) AddPost(username string, comments int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accountByUsername(username)
	s.pin(a)
	g := &ids{next: uint64(900_000_000 + len(s.media))}
	m := &media{id: g.media(), owner: a, ts: s.now().Truncate(time.Second), mediaType: "IMAGE", productType: "FEED",
		shortcode: shortcode(s.rng), caption: "Fresh today #new", commentsEnabled: true}
	spreadComments(s.rng, g, []*media{m}, comments)
	a.media = append([]*media{m}, a.media...)
	s.media[m.id] = m
	for _, c := range m.comments {
		s.comments[c.id] = c
		for _, r := range c.replies {
			s.comments[r.id] = r
		}
	}
	return m.id
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.ByEndpoint = map[string]int{}
	for k, v := range s.stats.ByEndpoint {
		out.ByEndpoint[k] = v
	}
	return out
}

var versionPrefix = regexp.MustCompile(`^v\d+\.\d+$`)

// ServeHTTP answers GET requests: /[vX.Y/]{node}[/{edge}]?fields=...&access_token=...
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := s.opts.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	status, body, h := s.answer(r)
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) answer(r *http.Request) (int, []byte, http.Header) {
	s.stats.Requests++
	h := http.Header{}
	if r.Method != http.MethodGet {
		e := errBadRequest(100, 0, "(#100) Unsupported method: the fake answers GET only")
		return e.status, e.body, h
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) > 0 && versionPrefix.MatchString(parts[0]) {
		parts = parts[1:]
	}
	q := r.URL.Query()
	token := q.Get("access_token")
	if token == "" {
		token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	viewer := s.accountByToken(token)
	endpoint := endpointName(parts, q)
	s.stats.ByEndpoint[endpoint]++
	if viewer == nil {
		e := errTokenInvalid
		if token == "" {
			e = errBadRequest(104, 0, "An access token is required to request this resource.")
		}
		return e.status, e.body, h
	}
	if viewer.spec.TokenExpired {
		return errTokenExpired.status, errTokenExpired.body, h
	}
	now := s.now()
	// Business discovery counts against the app's Platform Rate Limits, app-wide; a connected
	// account's calls against its token's Business Use Case budget (Meta, "Rate Limits").
	discovery := strings.HasPrefix(endpoint, "discovery_")
	key := "token:" + viewer.id
	if discovery {
		key = "app"
	}
	s.usage(h, viewer, key, discovery, now)
	if s.stats.Requests%callsSweepEvery == 0 {
		s.sweepCalls(now)
	}
	if until, ok := s.throttled[key]; ok && now.Before(until) {
		s.stats.WhileThrottled++
		return s.throttle(h, viewer, key, discovery, now, false)
	}
	if n := s.opts.ThrottleEvery; n > 0 && s.stats.Requests%n == 0 {
		return s.throttle(h, viewer, key, discovery, now, true)
	}
	out, apiErr := s.route(parts, q, viewer, token)
	if apiErr != nil {
		return apiErr.status, apiErr.body, h
	}
	b, err := json.Marshal(out)
	if err != nil {
		e := errWith(http.StatusInternalServerError, 2, 0, "An unexpected error has occurred. Please retry your request later.", true)
		return e.status, e.body, h
	}
	return http.StatusOK, b, h
}

// callsSweepEvery is how many requests pass between two sweeps of the usage windows.
const callsSweepEvery = 1 << 16

// sweepCalls forgets the usage windows of budgets not called for an hour: a window is
// otherwise trimmed only when its budget is called again, and with a million generated
// accounts most tokens are called a few times a cycle.
func (s *Server) sweepCalls(now time.Time) {
	cut := now.Add(-time.Hour)
	for k, list := range s.calls {
		if len(list) == 0 || !list[len(list)-1].After(cut) {
			delete(s.calls, k)
		}
	}
}

// throttle answers with the next throttling code of the budget key stands for: the Platform
// codes (4, 17, 32, 613) for business discovery, the Business Use Case ones (80002, 80001) for a
// connected account's call; fresh throttling starts the budget's throttled time.
func (s *Server) throttle(h http.Header, viewer *account, key string, discovery bool, now time.Time, fresh bool) (int, []byte, http.Header) {
	var bodies []throttleBody
	for _, t := range throttleBodies {
		if t.platform == discovery {
			bodies = append(bodies, t)
		}
	}
	t := bodies[s.stats.Throttled%len(bodies)]
	s.stats.Throttled++
	if fresh {
		s.throttled[key] = now.Add(s.opts.ThrottleFor)
	}
	s.usage(h, viewer, key, discovery, now)
	return http.StatusBadRequest, t.body(), h
}

// usage sets the usage header of the budget key stands for: X-App-Usage on business discovery
// answers, X-Business-Use-Case-Usage on a connected account's; calls in the last hour against
// the hourly budget, plus the configured floors, capped at 100.
func (s *Server) usage(h http.Header, viewer *account, key string, discovery bool, now time.Time) {
	cut := now.Add(-time.Hour)
	list := s.calls[key]
	i := sort.Search(len(list), func(i int) bool { return list[i].After(cut) })
	list = append(list[i:], now)
	s.calls[key] = list
	floor := s.opts.UsageFloor + s.opts.BusinessUsageFloor
	if discovery {
		floor = s.opts.UsageFloor + s.opts.AppUsageFloor
	}
	budget := s.opts.CallsPerHour
	if discovery {
		budget = s.opts.AppCallsPerHour
	}
	pct := min(100, floor+len(list)*100/budget)
	regain := 0
	if until, ok := s.throttled[key]; ok && now.Before(until) {
		regain = s.opts.RegainMinutes
	}
	if discovery {
		a, _ := json.Marshal(obj{{"call_count", pct}, {"total_cputime", pct / 2}, {"total_time", pct / 2}})
		h.Set("X-App-Usage", string(a))
		return
	}
	b, _ := json.Marshal(map[string][]obj{viewer.id: {{{"type", "instagram"}, {"call_count", pct}, {"total_cputime", pct / 3},
		{"total_time", pct / 3}, {"estimated_time_to_regain_access", regain}}}})
	h.Set("X-Business-Use-Case-Usage", string(b))
}

func endpointName(parts []string, q url.Values) string {
	switch {
	case len(parts) == 1 && strings.Contains(q.Get("fields"), "business_discovery"):
		if strings.Contains(q.Get("fields"), "media") {
			return "discovery_media"
		}
		return "discovery_profile"
	case len(parts) == 1:
		return "node"
	case len(parts) == 2:
		return parts[1]
	}
	return "other"
}

// SetRawCaption replaces a post's caption with raw, a JSON string token the answers carry byte
// for byte: text as people write it and the platform sends it, with what Postgres cannot store
// (a NUL as \u0000, a lone surrogate escape \ud800, bytes that are not UTF-8). It reports
// whether the post exists.
func (s *Server) SetRawCaption(mediaID string, raw json.RawMessage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mediaByID(mediaID)
	ok := m != nil
	if ok {
		m.rawCaption = raw
	}
	return ok
}
