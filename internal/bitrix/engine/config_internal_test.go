package engine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
)

// unconnectedPool is a pool New accepts; it never connects, since neither New nor these tests
// touch the database.
func unconnectedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// validConfig is the smallest Config New accepts.
func validConfig(t *testing.T) Config {
	t.Helper()
	reg, err := NewRegistry(testUsers())
	if err != nil {
		t.Fatal(err)
	}
	return Config{Registry: reg, Pool: unconnectedPool(t), Log: slog.New(slog.DiscardHandler)}
}

func TestNewRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(*Config)
		want   string // in the error
	}{
		{"no registry", func(c *Config) { c.Registry = nil }, "Registry"},
		{"no pool", func(c *Config) { c.Pool = nil }, "Pool"},
		{"no log", func(c *Config) { c.Log = nil }, "Log"},
		{"negative test limit", func(c *Config) { c.TestLimit = -1 }, "TestLimit -1"},
		{"negative sample", func(c *Config) { c.SampleSize = -5 }, "SampleSize -5"},
		{"negative concurrency", func(c *Config) { c.Concurrency = -2 }, "Concurrency -2"},
		{"negative memory", func(c *Config) { c.MemoryLimit = -1 }, "MemoryLimit -1"},
		{"negative retry delay", func(c *Config) { c.RetryPolicy.Delays = []time.Duration{0, -time.Second} }, "Delays[1]"},
		{"negative jitter", func(c *Config) { c.RetryPolicy.Jitter = -0.1 }, "Jitter"},
		{"unknown deletions", func(c *Config) { c.Deletions = "purge" }, `"purge"`},
		{"nil delegate", func(c *Config) { c.Delegates = map[string]Source{"7": nil} }, `Delegates["7"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := validConfig(t)
			c.change(&cfg)
			e, err := New(cfg)
			if err == nil || e != nil {
				t.Fatalf("New = %v, %v; want a refusal", e, err)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New: %v; want ErrConfig naming %s", err, c.want)
			}
		})
	}
}

func TestNewAppliesDefaultsOnce(t *testing.T) {
	t.Parallel()
	sleep := func(context.Context, time.Duration) error { return nil }
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	m := metrics.New()
	cases := []struct {
		name   string
		change func(*Config)
		check  func(t *testing.T, e *Engine)
	}{
		{"zero values take the defaults", func(*Config) {}, func(t *testing.T, e *Engine) {
			if e.concurrency != defaultConcurrency || e.sampleSize != defaultSampleSize || e.memoryLimit != defaultMemoryLimit {
				t.Errorf("concurrency %d, sample %d, memory %d; want %d, %d, %d", e.concurrency, e.sampleSize, e.memoryLimit,
					defaultConcurrency, defaultSampleSize, defaultMemoryLimit)
			}
			if e.deletions != DeletionsKeep || e.testLimit != 0 || e.allowMassDelete {
				t.Errorf("deletions %q, test limit %d, mass delete %v; want keep, 0, false", e.deletions, e.testLimit, e.allowMassDelete)
			}
			if !slices.Equal(e.retryPolicy.Delays, retry.Default().Delays) || e.retryPolicy.Jitter != retry.Default().Jitter {
				t.Errorf("retry policy %+v, want retry.Default()", e.retryPolicy)
			}
			if e.metrics == nil || e.now == nil || e.zone != nil {
				t.Errorf("metrics %v, now set %v, zone %v; want a set of its own, time.Now, none", e.metrics, e.now != nil, e.zone)
			}
		}},
		{"values given are kept", func(c *Config) {
			c.Concurrency, c.SampleSize, c.MemoryLimit, c.TestLimit = 3, 1000, 64<<20, 7
			c.Deletions, c.AllowMassDelete, c.Metrics, c.Now = DeletionsPropagate, true, m, clock
			c.RetryPolicy = retry.Policy{Delays: []time.Duration{0, 0}}
			c.SourceZone = time.UTC
		}, func(t *testing.T, e *Engine) {
			if e.concurrency != 3 || e.sampleSize != 1000 || e.memoryLimit != 64<<20 || e.testLimit != 7 {
				t.Errorf("concurrency %d, sample %d, memory %d, test limit %d; want 3, 1000, 64 MiB, 7",
					e.concurrency, e.sampleSize, e.memoryLimit, e.testLimit)
			}
			if e.deletions != DeletionsPropagate || !e.allowMassDelete || e.metrics != m || !e.now().Equal(clock()) || e.zone != time.UTC {
				t.Errorf("deletions %q, mass delete %v, metrics given %v, clock given %v, zone %v", e.deletions, e.allowMassDelete,
					e.metrics == m, e.now().Equal(clock()), e.zone)
			}
			if !slices.Equal(e.retryPolicy.Delays, []time.Duration{0, 0}) {
				t.Errorf("retry delays %v, want the two given", e.retryPolicy.Delays)
			}
		}},
		{"a policy without delays keeps its clock", func(c *Config) {
			c.RetryPolicy = retry.Policy{Sleep: sleep}
		}, func(t *testing.T, e *Engine) {
			if !slices.Equal(e.retryPolicy.Delays, retry.Default().Delays) || e.retryPolicy.Sleep == nil {
				t.Errorf("retry policy %+v: want retry.Default()'s delays with the Sleep given", e.retryPolicy)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := validConfig(t)
			c.change(&cfg)
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, e)
		})
	}
}
