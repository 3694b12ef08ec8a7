package bitrix_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// BenchmarkGetChats runs a whole chats get (recent list, participants, every message, stored in
// a fresh database) against a fake portal holding BITRIX_BENCH_CHATS chats (default 1,000) of
// BITRIX_BENCH_MESSAGES messages each (default 200), at the standard plan's limit (2 requests/s,
// bucket 50, starting empty) with the concurrency cap at 1, 4 and 8, and reports per run:
//
//	http_calls     requests sent            calls/msg  http_calls per message read
//	wall_s         real time                floor_s    the least time the rate limit allows
//	x_floor        wall_s / floor_s         503s       QUERY_LIMIT_EXCEEDED answers
//
// Everything runs in real time, no accelerated clock. The portal holds every answer back for
// 50 ms plus 20 ms per method it ran (a batch of 50 message pages takes about a second, as on a
// real portal), outside its lock, so concurrent batches overlap their waiting the way they
// would on a real one.
func BenchmarkGetChats(b *testing.B) {
	chats := envInt(b, "BITRIX_BENCH_CHATS", 1_000)
	perChat := envInt(b, "BITRIX_BENCH_MESSAGES", 200)
	std := rest.DefaultRate()
	for _, conc := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				pool := dbtest.Pool(b)
				portal := bitrixfake.New(bitrixfake.Options{Users: chats, Chats: chats, MessagesPerChat: perChat, Seed: 62,
					Rate: std.PerSecond, Burst: std.Burst, Latency: 50 * time.Millisecond, CommandLatency: 20 * time.Millisecond})
				srv := httptest.NewServer(portal)
				src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{
					Limiter: rate.NewLimiter(rate.Limit(std.PerSecond), std.Burst-1),
					Logger:  quietLog(),
				})
				if err != nil {
					b.Fatal(err)
				}
				e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Log: quietLog(),
					Metrics: metrics.New(), Actor: "bench", Concurrency: conc})
				b.StartTimer()

				start := time.Now()
				st, err := e.Get(context.Background(), bitrix.Chats)
				wall := time.Since(start).Seconds()
				if err != nil {
					b.Fatal(err)
				}
				srv.Close()
				if st.Of(bitrix.ChatMessages).Rows != chats*perChat {
					b.Fatalf("read %d messages, want %d", st.Of(bitrix.ChatMessages).Rows, chats*perChat)
				}
				reportAgainstFloor(b, src.Stats(), std, false, wall)
				b.ReportMetric(float64(src.Stats().Requests)/float64(st.Of(bitrix.ChatMessages).Rows), "calls/msg")
			}
		})
	}
}
