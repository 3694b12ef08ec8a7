package pgsession_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/pgsession"
)

// BenchmarkFence measures what the fence adds to a write: a transaction of one move of a batch
// of 20 records with its status_history rows (a set's batch), on a pool that carries no run and
// on one that carries the lock's holder. The figures go to docs/benchmarks.md.
func BenchmarkFence(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		name := "unfenced"
		if fenced {
			name = "fenced"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var f *pgsession.Fence
			if fenced {
				f = &pgsession.Fence{}
			}
			p := pool(b, dbtest.URL(b), pgsession.Defaults(), f)
			if fenced {
				claim(b, p, "bench", 1)
				f.Hold("bench", 1)
			}
			if _, err := p.Exec(ctx, `CREATE TABLE things (id bigint PRIMARY KEY, n integer NOT NULL);
INSERT INTO things SELECT g, 0 FROM generate_series(1, 20) g;
SELECT ingest_fence_table('things')`); err != nil {
				b.Fatal(err)
			}
			ids := make([]int64, 20)
			for i := range ids {
				ids[i] = int64(i + 1)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				err := pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `UPDATE things SET n = n + 1 WHERE id = ANY($1)`, ids); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `INSERT INTO status_history (machine, record_id, from_status, to_status, actor)
SELECT 'things', id, 'a', 'b', 'bench' FROM unnest($1::bigint[]) id`, ids)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
