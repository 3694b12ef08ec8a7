package social_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

// testKey is SOCIAL_TOKEN_KEY for tests.
var testKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))

// env is one database and one fake Graph API.
type env struct {
	t      testing.TB
	ctx    context.Context
	pool   *pgxpool.Pool
	fake   *graphfake.Server
	base   string
	sealer *social.Sealer
	logs   *syncBuffer
	// enrichURL is the fake enrichment provider's root, once enrichEnv started one.
	enrichURL string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t testing.TB, o graphfake.Options) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), pool: tunedPool(t), fake: graphfake.New(o), logs: &syncBuffer{}}
	srv := httptest.NewServer(e.fake)
	t.Cleanup(srv.Close)
	e.base = srv.URL + "/v23.0"
	var err error
	if e.sealer, err = social.NewSealer(testKey); err != nil {
		t.Fatal(err)
	}
	return e
}

// tunedPool is a pool on a new database, tuned as the commands tune theirs.
func tunedPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	social.TunePool(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// syncer returns a Syncer of shard index of count (count 0: unsharded) with fast schedules.
func (e *env) syncer(index, count int) *social.Syncer {
	e.t.Helper()
	g, err := graph.New(graph.Options{BaseURL: e.base, UserAgent: "test", Retry: &retry.Policy{Delays: []time.Duration{0}}})
	if err != nil {
		e.t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := &social.Syncer{Pool: e.pool, Graph: g, Sealer: e.sealer, Log: log, Metrics: metrics.New(), Actor: "test",
		Gate:  &social.Gate{Pool: e.pool, Log: log, ParkFloor: 200 * time.Millisecond, MaxPause: 10 * time.Millisecond},
		Pause: -1, RetryPolicy: retry.Policy{Delays: []time.Duration{0, 0}}}
	if count > 0 {
		s.Shard.Count, s.Shard.Index = count, index
	}
	return s
}

// addAll registers every account of the fake: connected ones with their tokens, the others by
// username through business discovery.
func (e *env) addAll() {
	e.t.Helper()
	for _, a := range e.fake.Accounts() {
		if a.Connected {
			if _, err := social.Add(e.ctx, e.pool, e.sealer, social.NewAccount{IGUserID: a.ID, Token: a.Token}, "test"); err != nil {
				e.t.Fatalf("add %s: %v", a.Username, err)
			}
		}
	}
	for _, a := range e.fake.Accounts() {
		if !a.Connected {
			if _, err := social.Add(e.ctx, e.pool, e.sealer, social.NewAccount{Username: a.Username}, "test"); err != nil {
				e.t.Fatalf("add %s: %v", a.Username, err)
			}
		}
	}
}

// syncAll runs every sync command and normalize once, in the DAG's order.
func (e *env) syncAll(s *social.Syncer) {
	e.t.Helper()
	for _, step := range []struct {
		name string
		fn   func(context.Context) (social.Stats, error)
	}{{"profiles", s.SyncProfiles}, {"posts", s.SyncPosts}, {"comments", s.SyncComments}, {"normalize", s.Normalize}} {
		if _, err := step.fn(e.ctx); err != nil {
			e.t.Fatalf("%s: %v\nlogs:\n%s", step.name, err, e.logs.String())
		}
	}
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}
