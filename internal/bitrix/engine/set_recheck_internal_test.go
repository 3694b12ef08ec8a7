package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// TestSetLeavesRecordsMovedSinceThePick: a record picked in NEW that another run (or a person)
// moved to IMPORT_OK before set loaded it is left alone, not sent again nor moved from
// IMPORT_OK to IMPORT_OK ("transition not allowed", which failed the run). The engine has no
// target: sending anything would fail the test.
func TestSetLeavesRecordsMovedSinceThePick(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t)
	ctx := context.Background()
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum, status)
VALUES ('users', '7', '{"ID": "7"}', 'c', 'IMPORT_OK') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	s := &setter{e: build(Config{Pool: pool, Metrics: metrics.New(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}), st: SetStats{}}
	if err := s.importIDs(ctx, testUsers(), []int64{id}); err != nil {
		t.Fatalf("set of a record moved since its pick: %v", err)
	}
	var st string
	var moves int
	if err := pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM status_history) FROM bitrix_records WHERE id = $1`, id).Scan(&st, &moves); err != nil {
		t.Fatal(err)
	}
	if st != string(ImportOK) || moves != 0 {
		t.Errorf("record = %s after %d moves, want IMPORT_OK untouched", st, moves)
	}
}
