package social

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

// AppKey is the park key of the app's Platform Rate Limits budget (codes 4, 17, 32, 613 on a
// business discovery call, X-App-Usage): the budget business discovery calls share app-wide.
// Connected accounts' calls do not count against it (Meta: Instagram Platform calls are
// subject to Business Use Case limits, per app and app user) and never wait for it.
const AppKey = "app"

// TokenKey is the park key of one token's Business Use Case budget (codes 80001, 80002, and
// any throttling answer to a connected account's call; X-Business-Use-Case-Usage): the limit is
// per app and app user, so it stops that token's connected calls only (business discovery
// through the token counts against the app's Platform Rate Limits instead).
func TokenKey(fingerprint string) string { return "token:" + fingerprint }

// Gate keeps calls under the platform's limits for every pod at once: it slows down as the
// usage headers approach the limit, and parks a token (or the app) in social_parks until the
// time the platform gave when it throttles us, when a usage header reaches ParkAt, or when the
// business-use-case header says access is being regained, so that no run anywhere calls with
// it before then. Meta: "When the limit has been reached, stop making API
// calls. Continuing to make calls will continue to increase your call count."
type Gate struct {
	Pool *pgxpool.Pool
	Log  *slog.Logger
	// SlowFrom is the usage percentage from which calls are spaced out (default 75); the pause
	// grows linearly to MaxPause at ParkAt.
	SlowFrom float64
	// ParkAt is the usage percentage at which the key is parked (default 100: the limit; below
	// it the gate only slows down).
	ParkAt float64
	// MaxPause is the pause between calls just below ParkAt (default 5 s).
	MaxPause time.Duration
	// ParkFloor is the shortest park (default 1 minute): the platform's regain estimate is in
	// whole minutes and often 0.
	ParkFloor time.Duration
	// Now and Sleep are the clock (tests replace them).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	mu     sync.Mutex
	parks  map[string]park
	loaded time.Time
	pause  map[string]time.Duration
	lanes  map[string]*lane
}

// lane lets one call of a budget be in flight at a time, while the budget's usage is unknown
// (no answer read yet) or near the limit (its calls are paced): a shard with many records in
// flight then sends the next call only after the last answer's usage headers are read, so a
// park or a pause takes effect before another call is made, as it did one record at a time.
type lane struct {
	sem   chan struct{}
	users int
}

type park struct {
	until  time.Time
	reason string
}

// ParkedError says a call was not made because its token or the app is parked.
type ParkedError struct {
	Key    string
	Until  time.Time
	Reason string
}

func (e *ParkedError) Error() string {
	return fmt.Sprintf("%s parked until %s: %s", e.Key, e.Until.UTC().Format(time.RFC3339), e.Reason)
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Gate) defaults() (slowFrom, parkAt float64, maxPause, floor time.Duration) {
	slowFrom, parkAt, maxPause, floor = g.SlowFrom, g.ParkAt, g.MaxPause, g.ParkFloor
	if slowFrom <= 0 {
		slowFrom = 75
	}
	if parkAt <= 0 {
		parkAt = 100
	}
	if maxPause <= 0 {
		maxPause = 5 * time.Second
	}
	if floor <= 0 {
		floor = time.Minute
	}
	return
}

// refresh reloads the parks other pods wrote, at most every few seconds.
func (g *Gate) refresh(ctx context.Context) error {
	g.mu.Lock()
	fresh := g.parks != nil && g.now().Sub(g.loaded) < 3*time.Second
	g.mu.Unlock()
	if fresh {
		return nil
	}
	rows, err := g.Pool.Query(ctx, `SELECT key, until, reason FROM social_parks WHERE until > now()`)
	if err != nil {
		return fmt.Errorf("read parks: %w", err)
	}
	parks := map[string]park{}
	var key, reason string
	var until time.Time
	for rows.Next() {
		if err := rows.Scan(&key, &until, &reason); err != nil {
			rows.Close()
			return fmt.Errorf("read parks: %w", err)
		}
		parks[key] = park{until, reason}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read parks: %w", err)
	}
	g.mu.Lock()
	// A park this process made while the read ran may not be in it yet (Park notes it here
	// first): keep it.
	now := g.now()
	for k, p := range g.parks {
		if q, ok := parks[k]; now.Before(p.until) && (!ok || p.until.After(q.until)) {
			parks[k] = p
		}
	}
	g.parks, g.loaded = parks, now
	g.mu.Unlock()
	return nil
}

// Check returns a *ParkedError when any of keys is parked.
func (g *Gate) Check(ctx context.Context, keys ...string) error {
	if err := g.refresh(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for _, k := range keys {
		if p, ok := g.parks[k]; ok && now.Before(p.until) {
			return &ParkedError{Key: k, Until: p.until, Reason: p.reason}
		}
	}
	return nil
}

// Enter starts a call counted against keys: while a key's usage is unknown or near its limit,
// it waits for the key's call in flight to end (see lane). It returns the release to call once
// the answer's usage is observed (Observe) or the call failed.
func (g *Gate) Enter(ctx context.Context, keys ...string) (release func(), err error) {
	var held []string
	release = func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, k := range held {
			l := g.lanes[k]
			<-l.sem
			if l.users--; l.users == 0 {
				delete(g.lanes, k)
			}
		}
		held = nil
	}
	for _, k := range keys {
		g.mu.Lock()
		d, seen := g.pause[k]
		if seen && d <= 0 {
			g.mu.Unlock()
			continue
		}
		if g.lanes == nil {
			g.lanes = map[string]*lane{}
		}
		l := g.lanes[k]
		if l == nil {
			l = &lane{sem: make(chan struct{}, 1)}
			g.lanes[k] = l
		}
		l.users++
		g.mu.Unlock()
		select {
		case l.sem <- struct{}{}:
			held = append(held, k)
		case <-ctx.Done():
			g.mu.Lock()
			if l.users--; l.users == 0 {
				delete(g.lanes, k)
			}
			g.mu.Unlock()
			release()
			return func() {}, ctx.Err()
		}
	}
	return release, nil
}

// Seen records that an answer of keys was read: their usage is known from now on (a budget
// whose answers carry no usage header is not held to one call at a time forever).
func (g *Gate) Seen(keys ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pause == nil {
		g.pause = map[string]time.Duration{}
	}
	for _, k := range keys {
		if _, ok := g.pause[k]; !ok {
			g.pause[k] = 0
		}
	}
}

// Pace waits the slowdown pause of keys (the longest), before a call.
func (g *Gate) Pace(ctx context.Context, keys ...string) error {
	g.mu.Lock()
	var d time.Duration
	for _, k := range keys {
		d = max(d, g.pause[k])
	}
	g.mu.Unlock()
	if d <= 0 {
		return nil
	}
	if g.Sleep != nil {
		return g.Sleep(ctx, d)
	}
	return retry.Sleep(ctx, d)
}

// Observe reads a response's usage headers: it sets the pause of the app's budget
// (X-App-Usage) and of the token's (X-Business-Use-Case-Usage), and parks either once its usage
// reaches ParkAt. It returns the *ParkedError of each park it made, joined.
func (g *Gate) Observe(ctx context.Context, u graph.Usage, tokenKey string) error {
	slowFrom, parkAt, maxPause, floor := g.defaults()
	pauseFor := func(pct float64) time.Duration {
		if pct < slowFrom {
			return 0
		}
		return time.Duration(float64(maxPause) * min(1, (pct-slowFrom)/(parkAt-slowFrom)))
	}
	app, biz := u.AppPercent(), u.BusinessPercent()
	g.mu.Lock()
	if g.pause == nil {
		g.pause = map[string]time.Duration{}
	}
	if u.App != nil {
		g.pause[AppKey] = pauseFor(app)
	}
	if u.Business != nil {
		g.pause[tokenKey] = pauseFor(biz)
	}
	g.mu.Unlock()
	wait := max(u.RegainAfter(), floor)
	var errs []error
	if app >= parkAt {
		errs = append(errs, g.Park(ctx, AppKey, g.now().Add(wait), fmt.Sprintf("X-App-Usage at %.0f%%", app)))
	}
	switch {
	case biz >= parkAt:
		errs = append(errs, g.Park(ctx, tokenKey, g.now().Add(wait), fmt.Sprintf("X-Business-Use-Case-Usage at %.0f%%", biz)))
	case u.RegainAfter() > 0:
		errs = append(errs, g.Park(ctx, tokenKey, g.now().Add(wait), fmt.Sprintf("X-Business-Use-Case-Usage: access regained in %s", u.RegainAfter())))
	}
	return errors.Join(errs...)
}

// Throttled parks the budget a throttling answer concerns until the time the platform gave,
// and returns the *ParkedError: a business discovery call's is the app's Platform Rate Limits
// (Platform codes 4, 17, 32, 613 are what it answers; any other throttling answer to it stops
// discovery all the same, as the only budget its calls wait for), a connected account's call's
// is its token's Business Use Case budget, whatever the code.
func (g *Gate) Throttled(ctx context.Context, ae *graph.APIError, tokenKey string, discovery bool) error {
	_, _, _, floor := g.defaults()
	key := tokenKey
	if discovery {
		key = AppKey
	}
	return g.Park(ctx, key, g.now().Add(max(ae.RegainAfter, floor)), fmt.Sprintf("throttled: code %d (HTTP %d)", ae.Code, ae.HTTPStatus))
}

// Park records that key may not be used before until (a later park wins), for every pod.
func (g *Gate) Park(ctx context.Context, key string, until time.Time, reason string) error {
	// This process's other calls in flight see the park before it is written: they must not
	// wait for the database to stop calling.
	g.mu.Lock()
	if g.parks == nil {
		g.parks = map[string]park{}
	}
	if p := g.parks[key]; until.After(p.until) {
		g.parks[key] = park{until, reason}
	}
	g.mu.Unlock()
	_, err := g.Pool.Exec(ctx, `INSERT INTO social_parks (key, until, reason) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET until = greatest(social_parks.until, EXCLUDED.until), reason = EXCLUDED.reason, parked_at = now()`,
		key, until, reason)
	if err != nil {
		return fmt.Errorf("park %s: %w", key, err)
	}
	if g.Log != nil {
		g.Log.Warn("parked: no call with it until the platform's time", "key", key, "until", until.UTC().Format(time.RFC3339), "reason", reason)
	}
	return &ParkedError{Key: key, Until: until, Reason: reason}
}
