package enginetest

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

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
)

// Options configure a World. The zero value is an empty portal, a target that assigns ids
// itself and the synthetic Registry.
type Options struct {
	// Portal and Target configure the fakes.
	Portal bitrixfake.Options
	Target targetfake.Options
	// Registry is what the world's engines migrate; nil means Registry().
	Registry *engine.Registry
	// MaxAnswerBytes caps the portal's answers (rest.Options.MaxAnswerBytes); 0 is the
	// client's default. A test of answers over the cap sets a small one: reading 64 MiB of a
	// gzip bomb, three times, under the race detector costs a minute.
	MaxAnswerBytes int64
}

// World is one test's world: a fresh database, a fake portal and a fake target over HTTP, the
// clients to them, the log the engine writes and its metrics. Everything it starts is stopped
// when the test ends.
type World struct {
	T        testing.TB
	Ctx      context.Context
	Pool     *pgxpool.Pool
	Portal   *bitrixfake.Portal
	Source   *rest.Client
	Target   *targetfake.Server
	Client   *importapi.Client
	Log      *Buffer
	Metrics  *metrics.Metrics
	Registry *engine.Registry
	// PortalURL is the fake portal's base URL (without the webhook's path).
	PortalURL string
}

// New starts a world for t. When the test ends it fails the test if either token appears in
// the log, and, for a failed test, prints the log.
func New(t testing.TB, opts Options) *World {
	t.Helper()
	w := &World{T: t, Ctx: context.Background(), Pool: dbtest.Pool(t), Log: &Buffer{}, Metrics: metrics.New(),
		Registry: opts.Registry}
	if w.Registry == nil {
		w.Registry = Registry()
	}
	w.Portal = bitrixfake.New(opts.Portal)
	srv := httptest.NewServer(w.Portal)
	t.Cleanup(srv.Close)
	w.PortalURL = srv.URL
	var err error
	// No rate limit and retries without waiting: the fake answers at once, and tests that
	// want the limiter or the schedule set their own.
	w.Source, err = rest.New(srv.URL+w.Portal.WebhookPath(), rest.Options{
		Limiter:        rate.NewLimiter(rate.Inf, 1),
		Retry:          retry.Policy{Delays: []time.Duration{0, 0, 0}},
		Logger:         w.Logger(),
		MaxAnswerBytes: opts.MaxAnswerBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Target = targetfake.New(opts.Target)
	tsrv := httptest.NewServer(w.Target)
	t.Cleanup(tsrv.Close)
	u, err := url.Parse(tsrv.URL + "/api/v1/")
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("import", w.Target.Token())
	if w.Client, err = importapi.New(u.String(), importapi.Options{Logger: w.Logger()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("engine log:\n%s", w.Log.String())
		}
		for _, secret := range []string{w.Portal.Token(), w.Target.Token()} {
			if strings.Contains(w.Log.String(), secret) {
				t.Errorf("a token appears in the log")
			}
		}
	})
	return w
}

// Logger returns a logger writing into the world's log, debug lines included.
func (w *World) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w.Log, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Engine returns a new engine on the world's registry, database, portal and target, with the
// options applied in order. It is the only place the tests build one, and tests set the
// engine's settings through options rather than on the engine afterwards, so that how an
// engine is built and configured changes here alone.
func (w *World) Engine(opts ...func(*engine.Config)) *engine.Engine {
	w.T.Helper()
	cfg := engine.Config{Registry: w.Registry,
		Pool:    w.Pool,
		Source:  w.Source,
		Target:  w.Client,
		Log:     w.Logger(),
		Metrics: w.Metrics,
		Actor:   "test",
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		w.T.Fatalf("engine: %v", err)
	}
	return e
}

// Phases runs phases of an entity and fails the test on the first error.
func (w *World) Phases(e *engine.Engine, entity string, phases ...engine.Phase) {
	w.T.Helper()
	for _, p := range phases {
		if err := e.Phase(w.Ctx, entity, p); err != nil {
			w.T.Fatalf("%s %s: %v", entity, p, err)
		}
	}
}

// Migrate runs get, set and verify of each entity, in the order given.
func (w *World) Migrate(e *engine.Engine, entities ...string) {
	w.T.Helper()
	for _, ent := range entities {
		w.Phases(e, ent, "get", "set", "verify")
	}
}

// Count runs a query returning one number.
func (w *World) Count(sql string, args ...any) int {
	w.T.Helper()
	var n int
	if err := w.Pool.QueryRow(w.Ctx, sql, args...).Scan(&n); err != nil {
		w.T.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Record returns one stored record.
func (w *World) Record(entity, sourceID string) engine.Record {
	w.T.Helper()
	r, err := engine.NewStore(w.Pool).Record(w.Ctx, entity, sourceID)
	if err != nil {
		w.T.Fatal(err)
	}
	return r
}

// Inventory returns an entity's inventory as `bitrix status` reports it.
func (w *World) Inventory(entity string) engine.Inventory {
	w.T.Helper()
	rep, err := w.Engine().Report(w.Ctx)
	if err != nil {
		w.T.Fatal(err)
	}
	for _, es := range rep.Entities {
		if es.Entity == entity && es.Inventory != nil {
			return *es.Inventory
		}
	}
	w.T.Fatalf("no inventory for %s", entity)
	return engine.Inventory{}
}

// TargetID returns the target id a record was imported under.
func (w *World) TargetID(entity, sourceID string) string {
	w.T.Helper()
	var id string
	if err := w.Pool.QueryRow(w.Ctx, `SELECT target_id FROM bitrix_id_map WHERE entity = $1 AND source_id = $2`, entity, sourceID).Scan(&id); err != nil {
		w.T.Fatalf("target id of %s %s: %v", entity, sourceID, err)
	}
	return id
}

// Metric returns a counter's value from the world's metrics.
func (w *World) Metric(name string) float64 { return w.Metrics.Snapshot()[name] }

// SourceURL is the fake portal's URL of a path (another user's webhook).
func (w *World) SourceURL(path string) string { return w.PortalURL + path }

// Buffer is a bytes.Buffer safe for the concurrent writes of a logger.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
