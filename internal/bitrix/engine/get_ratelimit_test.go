package engine_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestGetWaitsOutAFullBucketAtItsFirstCalls starts get against a portal whose bucket another
// client has filled: the count batch, the very first call, is refused
// over and over (and then answered with 502s) and must be waited out as any later call is,
// with the client's own schedule, never sooner than the bucket drains.
func TestGetWaitsOutAFullBucketAtItsFirstCalls(t *testing.T) {
	t.Parallel()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 300, Seed: 3}})
	var mu sync.Mutex
	var waits []time.Duration
	srv := httptest.NewServer(w.Portal)
	t.Cleanup(srv.Close)
	// The client's default schedule, as the command builds it, with the waits recorded.
	src, err := rest.New(srv.URL+w.Portal.WebhookPath(), rest.Options{
		Limiter: rate.NewLimiter(rate.Inf, 1),
		Logger:  w.Logger(),
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const refusals, failures = 9, 2
	w.Portal.FailNext("", bitrixfake.FaultQueryLimit, refusals)
	w.Portal.FailNext("", bitrixfake.FaultServerError, failures)

	w.Phases(w.Engine(func(e *engine.Config) { e.Source = src }), enginetest.People, "get")

	if got := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, enginetest.People); got != 300 {
		t.Errorf("%d people read, want 300", got)
	}
	s := src.Stats()
	if s.QueryLimit != refusals || s.ServerErrors != failures || s.Retries != refusals+failures {
		t.Errorf("client stats %+v, want %d refusals and %d server errors, each retried", s, refusals, failures)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) < refusals {
		t.Fatalf("%d waits, want at least %d", len(waits), refusals)
	}
	for i, d := range waits[:refusals] {
		if d < 500*time.Millisecond {
			t.Errorf("wait %d after a refusal was %v, want at least the bucket's drain interval (500ms)", i+1, d)
		}
	}
}
