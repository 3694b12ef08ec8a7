package bitrix_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// BenchmarkDeltaRerun is issue 35's benchmark: a whole `bitrix migrate` (engine.Migrate, every
// entity, as the command runs it) of a portal of BITRIX_BENCH_DEALS deals (default 100,000) and
// BITRIX_BENCH_TASKS tasks (default 10,000) with their children (product rows, timeline
// comments, checklists, comments) and a company, contact and user base in proportion, at the
// standard plan's limit (2 requests/s, bucket 50, on the portal and the client) with realistic
// answer times (50 ms a request, 20 ms a method run); then, after Churn(seed, 0.01), the rerun;
// then a rerun with nothing changed. The target answers at once: what is measured is the portal.
// Before each pass the portal's bucket drains, as between nightly runs. It reports per pass
// (first_, churn_, same_): requests (portal requests), s (wall time), floor_s (the least time the
// rate allows for those requests from an empty bucket), and the reruns' requests as a percentage
// of the first's (churn_pct, same_pct). Hours at the default size: run with -benchtime 1x and a
// long -timeout.
func BenchmarkDeltaRerun(b *testing.B) {
	deals := envInt(b, "BITRIX_BENCH_DEALS", 100_000)
	tasks := envInt(b, "BITRIX_BENCH_TASKS", 10_000)
	std := rest.DefaultRate()
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		portal := bitrixfake.New(bitrixfake.Options{Seed: 35, Users: 500, Groups: 20, Chats: 20, MessagesPerChat: 20, Posts: 50,
			Companies: max(1, deals/50), Contacts: max(1, deals/25), Deals: deals, Tasks: tasks, SmartItems: 100, Workflows: 4,
			Rate: std.PerSecond, Burst: std.Burst, Latency: 50 * time.Millisecond, CommandLatency: 20 * time.Millisecond})
		psrv := httptest.NewServer(portal)
		target := targetfake.New(targetfake.Options{})
		tsrv := httptest.NewServer(target)
		u, _ := url.Parse(tsrv.URL + "/api/v1/")
		u.User = url.UserPassword("import", target.Token())
		pool := dbtest.Pool(b)
		// pass runs one `bitrix migrate` with fresh clients (a new process), the portal's bucket
		// drained first, and returns its requests and wall time.
		pass := func(name string) (int64, float64) {
			time.Sleep(time.Duration(float64(std.Burst)/std.PerSecond*float64(time.Second)) + time.Second)
			src, err := rest.New(psrv.URL+portal.WebhookPath(), rest.Options{Limiter: std.NewLimiter(), Logger: quietLog()})
			if err != nil {
				b.Fatal(err)
			}
			client, err := importapi.New(u.String(), importapi.Options{Logger: quietLog()})
			if err != nil {
				b.Fatal(err)
			}
			e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Target: client, Log: benchLog(),
				Metrics: metrics.New(), Actor: "bench"})
			sent := target.Stats().Items
			start := time.Now()
			if err := e.Migrate(ctx, engine.MigrateOptions{Rate: std}); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			wall := time.Since(start).Seconds()
			st := src.Stats()
			b.Logf("%s: %d portal requests (%d answered 503) in %.1f s; %d items sent to the target", name, st.Requests,
				st.QueryLimit, wall, target.Stats().Items-sent)
			return st.Requests, wall
		}
		report := func(prefix string, requests int64, wall float64) {
			b.ReportMetric(float64(requests), prefix+"requests")
			b.ReportMetric(wall, prefix+"s")
			b.ReportMetric(max(0, float64(requests)-float64(std.Burst-1))/std.PerSecond, prefix+"floor_s")
		}
		b.StartTimer()
		first, firstWall := pass("first migration")
		rep := portal.Churn(35, 0.01)
		b.Logf("churn: %d changes\n%s", rep.Total(), rep)
		churn, churnWall := pass("rerun after 1% churn")
		same, sameWall := pass("rerun with nothing changed")
		b.StopTimer()
		psrv.Close()
		tsrv.Close()
		report("first_", first, firstWall)
		report("churn_", churn, churnWall)
		report("same_", same, sameWall)
		b.ReportMetric(100*float64(churn)/float64(first), "churn_pct")
		b.ReportMetric(100*float64(same)/float64(first), "same_pct")
		b.StartTimer()
	}
}
