package rest_test

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// BenchmarkListUsers lists 100k users from a portal with the cloud's
// leaky bucket (2 requests/s, 50 burst), its clock running 100 times
// faster than real time and the client's limiter scaled to match, and
// reports HTTP requests, 503 answers and portal-time seconds per listing.
//
//	go test -run '^$' -bench ListUsers ./internal/bitrix/rest/
func BenchmarkListUsers(b *testing.B) {
	const users, speed = 100_000, 100
	strategies := []struct {
		name string
		list func(b *testing.B, c *rest.Client) int
	}{
		{"id-chained-batches", func(b *testing.B, c *rest.Client) int {
			n := 0
			err := c.ListByID(b.Context(), rest.UsersScan(nil), "", func(p rest.Page) error {
				n += len(p.Rows)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			return n
		}},
		{"start-pages-without-batch", func(b *testing.B, c *rest.Client) int {
			n := 0
			for start := 0; ; start += rest.PageSize {
				resp, err := c.Call(b.Context(), "user.get", map[string]any{"start": start})
				if err != nil {
					b.Fatal(err)
				}
				rows, _ := resp.Rows()
				n += len(rows)
				if resp.Next == nil {
					return n
				}
			}
		}},
	}
	for _, s := range strategies {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				now := bitrixfake.Accelerated(speed)
				portal := bitrixfake.New(bitrixfake.Options{Users: users, Seed: 1, Rate: 2, Burst: 50, Now: now})
				srv := httptest.NewServer(portal)
				c, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{
					Limiter: rest.Rate{PerSecond: 2 * speed, Burst: 50}.NewLimiter(),
					Logger:  slog.New(slog.DiscardHandler),
				})
				if err != nil {
					b.Fatal(err)
				}
				began := now()
				if got := s.list(b, c); got != users {
					b.Fatalf("listed %d users, want %d", got, users)
				}
				elapsed := now().Sub(began)
				srv.Close()
				st := c.Stats()
				// The bucket's floor: the first 50 requests are free, the
				// rest drain at 2 per second.
				floor := time.Duration(max(0, st.Requests-50)) * time.Second / 2
				b.ReportMetric(float64(st.Requests), "requests/op")
				b.ReportMetric(float64(portal.Stats().QueryLimit), "503s/op")
				b.ReportMetric(elapsed.Seconds(), "portal-s/op")
				b.ReportMetric(floor.Seconds(), "floor-s/op")
			}
		})
	}
}
