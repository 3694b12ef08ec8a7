package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// BenchmarkDeletionPass concludes the deletions of a complete get pass over 100,000 stored
// records of which 1,000 (1%) were not seen: finding them, the mass-delete check, and moving
// them to DELETED_AT_SOURCE through the state machine in one transaction. Each iteration puts
// them back first (not timed).
func BenchmarkDeletionPass(b *testing.B) {
	const n, gone = 100_000, 1_000
	pool := dbtest.Pool(b)
	ctx := context.Background()
	reg, err := NewRegistry(testUsers())
	if err != nil {
		b.Fatal(err)
	}
	e := build(Config{Registry: reg, Pool: pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Actor: "bench",
		Metrics: metrics.New()})
	start := time.Now().Add(-time.Hour)
	if _, err := pool.Exec(ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum, status, fetched_at)
SELECT 'users', i::text, jsonb_build_object('ID', i::text), 'x', 'IMPORT_OK',
       CASE WHEN i % 100 = 0 THEN $2::timestamptz - interval '1 day' ELSE $2::timestamptz + interval '1 minute' END
FROM generate_series(1, $1) AS i`, n, start); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO bitrix_inventory (entity, pass, get_complete, get_started_at, get_finished_at)
VALUES ('users', 1, true, $1, now())`, start); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE bitrix_records`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := pool.Exec(ctx, `UPDATE bitrix_records SET status = 'IMPORT_OK' WHERE status = 'DELETED_AT_SOURCE'`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		moved, err := e.concludeDeletions(ctx, e.Entity("users"))
		if err != nil || moved != gone {
			b.Fatalf("concluded %d deletions, %v; want %d", moved, err, gone)
		}
	}
}
