package status_test

import (
	"fmt"
	"testing"

	"github.com/ingest-dev/ingest/internal/status"
)

// BenchmarkPick measures picking one batch of 100 from backlogs of very different sizes; the
// figures go to docs/benchmarks.md. The cost must not grow with the backlog.
func BenchmarkPick(b *testing.B) {
	for _, n := range []int64{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("backlog=%d", n), func(b *testing.B) {
			tb := setup(b)
			tb.insert(b, 1, n, pending)
			tb.insert(b, n+1, n+1_000, failed)
			if _, err := tb.pool.Exec(tb.ctx, "VACUUM ANALYZE things"); err != nil {
				b.Fatal(err)
			}
			statuses := []status.Status{pending, failed}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Walk the backlog like a run does, wrapping around at the end.
				after := int64(i*100) % n
				ids, err := things.Pick(tb.ctx, tb.pool, status.PickParams{Statuses: statuses, After: after, Limit: 100})
				if err != nil || len(ids) != 100 {
					b.Fatalf("pick: %d ids, %v", len(ids), err)
				}
			}
		})
	}
}
