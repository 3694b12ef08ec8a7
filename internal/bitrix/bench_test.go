package bitrix_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// BenchmarkGetUsers reads every user of a fake portal holding BITRIX_BENCH_USERS (default
// 100,000) at the standard plan's limit, 2 requests/s with a bucket of 50, in the ways a client
// can page user.get, and reports per run:
//
//	http_calls  requests sent       503s    QUERY_LIMIT_EXCEEDED answers
//	wall_s      real time           floor_s the least time the rate limit allows for http_calls
//	x_floor     wall_s / floor_s    (portal time, see below)
//
// "fresh" starts with the portal's bucket empty, as a job does after a quiet period: the first
// 49 requests go at once. "drained" starts with it full (another job just used it), so every
// request waits its turn and the floor is http_calls / 2 s.
//
// Plain offset paging needs ~2,000 requests, 1,000 s of rate limit; it runs on a portal clock
// (and limiter) BITRIX_BENCH_SPEEDUP times faster (default 20) and reports portal time: wall
// time multiplied back. Its per-request work is small next to the 25 ms it waits per request
// at that speed, so the figure is a fair estimate of the real one.
func BenchmarkGetUsers(b *testing.B) {
	users := envInt(b, "BITRIX_BENCH_USERS", 100_000)
	speedup := float64(envInt(b, "BITRIX_BENCH_SPEEDUP", 20))
	std := rest.DefaultRate()
	params := map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}}
	modes := []struct {
		name    string
		speedup float64
		drained bool
		run     func(ctx context.Context, b *testing.B, src *rest.Client) error
	}{
		{"id-batch/engine/fresh", 1, false, benchEngineGet},
		{"id-batch/engine/drained", 1, true, benchEngineGet},
		{"id-batch/http/drained", 1, true, func(ctx context.Context, b *testing.B, src *rest.Client) error {
			return src.ListByID(ctx, rest.UsersScan(params), "0", func(rest.Page) error { return nil })
		}},
		{"start-batch/http/drained", 1, true, func(ctx context.Context, b *testing.B, src *rest.Client) error {
			l := rest.List{Method: "user.get", Params: map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}, "sort": "ID", "order": "ASC"}}
			return src.ListByStart(ctx, l, 0, func(rest.Page) error { return nil })
		}},
		{"start-plain/http/drained", speedup, true, func(ctx context.Context, b *testing.B, src *rest.Client) error {
			for start := 0; ; {
				resp, err := src.Call(ctx, "user.get", map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"},
					"sort": "ID", "order": "ASC", "start": start})
				if err != nil {
					return err
				}
				if resp.Next == nil {
					return nil
				}
				start = *resp.Next
			}
		}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			for range b.N {
				portal := bitrixfake.New(bitrixfake.Options{Users: users, Seed: 61, Rate: std.PerSecond, Burst: std.Burst,
					Now: bitrixfake.Accelerated(m.speedup)})
				srv := httptest.NewServer(portal)
				limiter := rate.NewLimiter(rate.Limit(std.PerSecond*m.speedup), std.Burst-1)
				if m.drained {
					limiter.ReserveN(time.Now(), std.Burst-1)
				}
				src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: limiter, Logger: quietLog()})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := m.run(context.Background(), b, src); err != nil {
					b.Fatal(err)
				}
				wall := time.Since(start).Seconds() * m.speedup
				srv.Close()
				reportAgainstFloor(b, src.Stats(), std, m.drained, wall)
				b.ReportMetric(float64(users)/wall, "users/s")
			}
		})
	}
}

// BenchmarkGetUsersSlowPortal is users get against a portal that answers at a realistic pace
// (50 ms per request plus 20 ms per method run: about a second for a full batch of 50 pages) at
// the standard plan's limit (2 requests/s, bucket 50, starting empty), with BITRIX_BENCH_USERS
// users (default 20,000) and 1, 4 and 8 requests in flight. Besides the metrics of
// BenchmarkGetUsers it reports min_calls, the fewest requests any client needs (minGetCalls),
// and min_floor_s, the rate-limit floor of those: the figure to compare wall time with.
func BenchmarkGetUsersSlowPortal(b *testing.B) {
	users := envInt(b, "BITRIX_BENCH_USERS", 20_000)
	std := rest.DefaultRate()
	for _, conc := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				pool := dbtest.Pool(b)
				portal := bitrixfake.New(bitrixfake.Options{Users: users, Seed: 61, Rate: std.PerSecond, Burst: std.Burst,
					Latency: 50 * time.Millisecond, CommandLatency: 20 * time.Millisecond})
				srv := httptest.NewServer(portal)
				src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: std.NewLimiter(), Logger: quietLog()})
				if err != nil {
					b.Fatal(err)
				}
				e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Log: benchLog(), Metrics: metrics.New(), Actor: "bench", Concurrency: conc})
				b.StartTimer()
				start := time.Now()
				st, err := e.Get(context.Background(), bitrix.Users)
				wall := time.Since(start).Seconds()
				if err != nil {
					b.Fatal(err)
				}
				srv.Close()
				if st.Of(bitrix.Users).Rows != users || !st.Complete {
					b.Fatalf("get read %d users, want %d: %+v", st.Of(bitrix.Users).Rows, users, st)
				}
				reportAgainstFloor(b, src.Stats(), std, false, wall)
				minCalls := minGetCalls(users)
				b.ReportMetric(minCalls, "min_calls")
				b.ReportMetric(math.Max(0, minCalls-float64(std.Burst-1))/std.PerSecond, "min_floor_s")
				b.ReportMetric(float64(users)/wall, "users/s")
			}
		})
	}
}

// BenchmarkSetUsers imports BITRIX_BENCH_USERS users (default 20,000, read beforehand from a
// fake portal, not timed) into a fake target that answers every call in 200 ms, with 1, 4 and 8
// import calls in flight, and reports per run:
//
//	calls    import calls made          wall_s   real time
//	floor_s  calls x 200 ms / in flight  x_floor  wall_s / floor_s
func BenchmarkSetUsers(b *testing.B) {
	users := envInt(b, "BITRIX_BENCH_USERS", 20_000)
	const latency = 200 * time.Millisecond
	for _, conc := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				pool := dbtest.Pool(b)
				portal := bitrixfake.New(bitrixfake.Options{Users: users, Seed: 61})
				psrv := httptest.NewServer(portal)
				src, err := rest.New(psrv.URL+portal.WebhookPath(), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1), Logger: quietLog()})
				if err != nil {
					b.Fatal(err)
				}
				target := targetfake.New(targetfake.Options{Latency: latency})
				tsrv := httptest.NewServer(target)
				u, _ := url.Parse(tsrv.URL + "/api/v1/")
				u.User = url.UserPassword("import", target.Token())
				client, err := importapi.New(u.String(), importapi.Options{Logger: quietLog()})
				if err != nil {
					b.Fatal(err)
				}
				e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Target: client, Log: benchLog(), Metrics: metrics.New(),
					Actor: "bench", Concurrency: conc})
				if _, err := e.Get(context.Background(), bitrix.Users); err != nil {
					b.Fatal(err)
				}
				before := target.Stats().Requests
				b.StartTimer()
				start := time.Now()
				st, err := e.Set(context.Background(), bitrix.Users)
				wall := time.Since(start).Seconds()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				psrv.Close()
				tsrv.Close()
				if st[bitrix.Users].Imported != users {
					b.Fatalf("imported %d users, want %d", st[bitrix.Users].Imported, users)
				}
				calls := float64(target.Stats().Requests - before)
				floor := calls * latency.Seconds() / float64(conc)
				b.ReportMetric(calls, "calls")
				b.ReportMetric(wall, "wall_s")
				b.ReportMetric(floor, "floor_s")
				b.ReportMetric(wall/floor, "x_floor")
				b.StartTimer()
			}
		})
	}
}

// benchEngineGet runs the engine's get into a fresh database: the whole path, storage included.
func benchEngineGet(ctx context.Context, b *testing.B, src *rest.Client) error {
	b.StopTimer()
	pool := dbtest.Pool(b)
	b.StartTimer()
	e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Log: quietLog(), Metrics: metrics.New(), Actor: "bench"})
	st, err := e.Get(ctx, bitrix.Users)
	if err == nil && !st.Complete {
		err = fmt.Errorf("get incomplete: %+v", st)
	}
	return err
}

// reportAgainstFloor reports a run's requests and 503 answers, and its wall time against the
// least time the rate limit allows for those requests: all of them at the drain rate if the
// portal's bucket started full (drained), all but a bucket's worth otherwise.
func reportAgainstFloor(b *testing.B, st rest.Stats, limit rest.Rate, drained bool, wall float64) {
	queued := float64(st.Requests)
	if !drained {
		queued = math.Max(0, queued-float64(limit.Burst-1))
	}
	floor := queued / limit.PerSecond
	b.ReportMetric(float64(st.Requests), "http_calls")
	b.ReportMetric(float64(st.QueryLimit), "503s")
	b.ReportMetric(wall, "wall_s")
	b.ReportMetric(floor, "floor_s")
	if floor > 0 {
		b.ReportMetric(wall/floor, "x_floor")
	}
}

// minGetCalls is the fewest requests any client needs to list n rows: the first page, which
// brings the count, then every other page, 50 to a batch (what fast_bitrix24's get_all sends).
func minGetCalls(n int) float64 {
	return 1 + math.Ceil(float64(max(0, n-rest.PageSize))/float64(rest.PageSize*rest.MaxBatch))
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// benchEngine is engine.New for a benchmark, which stops on a configuration refused.
func benchEngine(tb testing.TB, cfg engine.Config) *engine.Engine {
	tb.Helper()
	e, err := engine.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive whole number", name, s)
	}
	return n
}

// benchLog is quietLog, unless BITRIX_BENCH_DEBUG is set: then the engine's debug lines (each
// request's fetch and store times) go to stderr.
func benchLog() *slog.Logger {
	if os.Getenv("BITRIX_BENCH_DEBUG") == "" {
		return quietLog()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
