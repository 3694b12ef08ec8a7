package bitrix_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
)

// env is one test's world: a fresh database, a fake portal and a fake target over HTTP, and
// the log the engine writes.
type env struct {
	t         *testing.T
	ctx       context.Context
	pool      *pgxpool.Pool
	portal    *bitrixfake.Portal
	source    *rest.Client
	target    *targetfake.Server
	client    *importapi.Client
	log       *syncBuffer
	metrics   *metrics.Metrics
	portalURL string // the fake portal's base URL
}

func newEnv(t *testing.T, opts bitrixfake.Options) *env {
	t.Helper()
	return newEnvTarget(t, opts, targetfake.Options{})
}

// newEnvTarget is newEnv with a target of the given options.
func newEnvTarget(t *testing.T, opts bitrixfake.Options, targetOpts targetfake.Options) *env {
	t.Helper()
	v := &env{t: t, ctx: context.Background(), pool: dbtest.Pool(t), log: &syncBuffer{}, metrics: metrics.New()}
	v.portal = bitrixfake.New(opts)
	srv := httptest.NewServer(v.portal)
	t.Cleanup(srv.Close)
	v.portalURL = srv.URL
	var err error
	v.source, err = rest.New(srv.URL+v.portal.WebhookPath(), rest.Options{
		Limiter: rate.NewLimiter(rate.Inf, 1),
		Retry:   retry.Policy{Delays: []time.Duration{0, 0, 0}},
		Logger:  v.logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	v.target = targetfake.New(targetOpts)
	tsrv := httptest.NewServer(v.target)
	t.Cleanup(tsrv.Close)
	u, _ := url.Parse(tsrv.URL + "/api/v1/")
	u.User = url.UserPassword("import", v.target.Token())
	if v.client, err = importapi.New(u.String(), importapi.Options{Logger: v.logger()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("engine log:\n%s", v.log.String())
		}
		for _, secret := range []string{v.portal.Token(), v.target.Token()} {
			if strings.Contains(v.log.String(), secret) {
				t.Errorf("a token appears in the log")
			}
		}
	})
	return v
}

func (v *env) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(v.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// config is the configuration of an engine on the env's database, source and target.
func (v *env) config() engine.Config {
	return engine.Config{Registry: bitrix.Catalog(),
		Pool:    v.pool,
		Source:  v.source,
		Target:  v.client,
		Log:     v.logger(),
		Metrics: v.metrics,
		Actor:   "test",
	}
}

// engine returns an engine on the env's database, source and target, its configuration changed
// by with, in order.
func (v *env) engine(with ...func(*engine.Config)) *engine.Engine {
	v.t.Helper()
	cfg := v.config()
	for _, f := range with {
		f(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		v.t.Fatal(err)
	}
	return e
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// count runs a count query.
func (v *env) count(sql string, args ...any) int {
	v.t.Helper()
	var n int
	if err := v.pool.QueryRow(v.ctx, sql, args...).Scan(&n); err != nil {
		v.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// record returns one stored record.
func (v *env) record(entity, sourceID string) engine.Record {
	v.t.Helper()
	r, err := engine.NewStore(v.pool).Record(v.ctx, entity, sourceID)
	if err != nil {
		v.t.Fatal(err)
	}
	return r
}

// phases runs phases of an entity and fails the test on the first error.
func (v *env) phases(e *engine.Engine, entity string, phases ...engine.Phase) {
	v.t.Helper()
	for _, p := range phases {
		if err := e.Phase(v.ctx, entity, p); err != nil {
			v.t.Fatalf("%s %s: %v", entity, p, err)
		}
	}
}

// migrateUsers reads, imports and verifies the users.
func (v *env) migrateUsers(e *engine.Engine) {
	v.t.Helper()
	v.phases(e, bitrix.Users, "get", "set", "verify")
}

// metric returns a counter's value from the run's metrics.
func (v *env) metric(name string) float64 {
	return v.metrics.Snapshot()[name]
}

// sourceURL is the fake portal's URL of a webhook path.
func (v *env) sourceURL(path string) string { return v.portalURL + path }
