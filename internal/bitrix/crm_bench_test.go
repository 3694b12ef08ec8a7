package bitrix_test

import (
	"context"
	"net/http/httptest"
	"net/url"
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

// BenchmarkGetDealsSlowPortal is deals get of BITRIX_BENCH_DEALS deals (default 100,000) from a
// portal that answers at a realistic pace (50 ms per request plus 20 ms per method run: about a
// second for a full batch of 50 pages) at the standard plan's limit, 2 requests/s with a bucket
// of 50, BITRIX_CONCURRENCY 8. "drained" starts with the client's bucket full (another job just
// used it), so every request waits its turn and the floor is calls / 2 s; "fresh" starts with it
// empty (the first 49 requests go at once). Reported as BenchmarkGetUsersSlowPortal, with
// min_calls the fewest requests any client needs (minGetCalls).
func BenchmarkGetDealsSlowPortal(b *testing.B) {
	deals := envInt(b, "BITRIX_BENCH_DEALS", 100_000)
	std := rest.DefaultRate()
	for _, drained := range []bool{true, false} {
		name := "fresh"
		if drained {
			name = "drained"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				pool := dbtest.Pool(b)
				portal := bitrixfake.New(bitrixfake.Options{Users: 500, Companies: 2_000, Contacts: 4_000, Deals: deals, Seed: 61,
					Rate: std.PerSecond, Burst: std.Burst, Latency: 50 * time.Millisecond, CommandLatency: 20 * time.Millisecond})
				srv := httptest.NewServer(portal)
				limiter := std.NewLimiter()
				if drained {
					limiter.ReserveN(time.Now(), std.Burst-1)
				}
				src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: limiter, Logger: quietLog()})
				if err != nil {
					b.Fatal(err)
				}
				e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Log: benchLog(), Metrics: metrics.New(), Actor: "bench", Concurrency: 8})
				b.StartTimer()
				start := time.Now()
				st, err := e.Get(context.Background(), bitrix.Deals)
				wall := time.Since(start).Seconds()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				srv.Close()
				if st.Of(bitrix.Deals).Rows != deals || !st.Complete {
					b.Fatalf("get read %d deals, want %d: %+v", st.Of(bitrix.Deals).Rows, deals, st)
				}
				reportAgainstFloor(b, src.Stats(), std, drained, wall)
				minCalls := minGetCalls(deals)
				b.ReportMetric(minCalls, "min_calls")
				b.ReportMetric(float64(deals)/wall, "deals/s")
				b.StartTimer()
			}
		})
	}
}

// BenchmarkSetDeals imports BITRIX_BENCH_DEALS deals (default 100,000; read beforehand with the
// users, funnels, stages, companies and contacts they name, which are imported into a target of
// their own first, none of it timed) into a fake target that answers every call in 200 ms, with
// BITRIX_CONCURRENCY 8, and reports calls (import calls made), calls_per_deal, wall_s, floor_s
// (calls x 200 ms / 8) and x_floor.
func BenchmarkSetDeals(b *testing.B) {
	deals := envInt(b, "BITRIX_BENCH_DEALS", 100_000)
	const latency, conc = 200 * time.Millisecond, 8
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		pool := dbtest.Pool(b)
		portal := bitrixfake.New(bitrixfake.Options{Users: 500, Companies: 2_000, Contacts: 4_000, Deals: deals, Seed: 61})
		psrv := httptest.NewServer(portal)
		src, err := rest.New(psrv.URL+portal.WebhookPath(), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1), Logger: quietLog()})
		if err != nil {
			b.Fatal(err)
		}
		target := func(latency time.Duration) (*targetfake.Server, *importapi.Client, func()) {
			t := targetfake.New(targetfake.Options{Latency: latency})
			srv := httptest.NewServer(t)
			u, _ := url.Parse(srv.URL + "/api/v1/")
			u.User = url.UserPassword("import", t.Token())
			c, err := importapi.New(u.String(), importapi.Options{Logger: quietLog()})
			if err != nil {
				b.Fatal(err)
			}
			return t, c, srv.Close
		}
		_, fast, closeFast := target(0)
		e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Target: fast, Log: benchLog(), Metrics: metrics.New(), Actor: "bench", Concurrency: conc})
		for _, entity := range []string{bitrix.Users, bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts} {
			for _, phase := range []engine.Phase{"get", "set", "verify"} {
				if err := e.Phase(ctx, entity, phase); err != nil {
					b.Fatalf("%s %s: %v", entity, phase, err)
				}
			}
		}
		if _, err := e.Get(ctx, bitrix.Deals); err != nil {
			b.Fatal(err)
		}
		slow, client, closeSlow := target(latency)
		e = benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Target: client, Log: benchLog(), Metrics: metrics.New(), Actor: "bench", Concurrency: conc})
		b.StartTimer()
		start := time.Now()
		st, err := e.Set(ctx, bitrix.Deals)
		wall := time.Since(start).Seconds()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		psrv.Close()
		closeFast()
		closeSlow()
		if c := st[bitrix.Deals]; c.Imported != deals {
			b.Fatalf("imported %d deals, want %d: %+v", c.Imported, deals, c)
		}
		calls := float64(slow.Stats().Requests)
		floor := calls * latency.Seconds() / conc
		b.ReportMetric(calls, "calls")
		b.ReportMetric(calls/float64(deals), "calls_per_deal")
		b.ReportMetric(wall, "wall_s")
		b.ReportMetric(floor, "floor_s")
		b.ReportMetric(wall/floor, "x_floor")
		b.ReportMetric(float64(deals)/wall, "deals/s")
		b.StartTimer()
	}
}
