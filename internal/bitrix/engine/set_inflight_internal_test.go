package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// TestUnfinishedBatchIsOneLine: a set rerun after a kill logs one line for each batch the dead
// process left in flight, naming its records, not one line per record.
func TestUnfinishedBatchIsOneLine(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t)
	ctx := context.Background()
	var ids []int64
	for i := 1; i <= 30; i++ {
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum, status)
VALUES ('users', $1, '{}', 'c', 'NEW') RETURNING id`, fmt.Sprint(i)).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Two batches in flight, of two runs: 25 records, then 5.
	for run, batch := range map[int64][]int64{41: ids[:25], 42: ids[25:]} {
		if _, err := Machine.StartAttempts(ctx, pool, batch, pending, run); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	s := &setter{e: build(Config{Pool: pool, Metrics: metrics.New(), Log: slog.New(slog.NewTextHandler(&logs, nil))}), st: SetStats{}}
	if err := s.countUnfinished(ctx, testUsers()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines for two batches in flight, want 2:\n%s", len(lines), logs.String())
	}
	for _, want := range []string{"run_id=41 ", "records=25 ", "retry=25 ", " and 5 more", fmt.Sprintf("ids=\"%d,", ids[0]), "run_id=42 ", "records=5 "} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, logs.String())
		}
	}
	if c := s.st.of("users"); c.Unfinished != 30 || c.Retry != 30 {
		t.Errorf("stats = %+v, want 30 unfinished, 30 retried", c)
	}
}
