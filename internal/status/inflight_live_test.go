package status_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/status"
)

// An open attempt of a run that still holds its lock is in flight, whatever lock the caller
// holds: FailUnfinished counts those of runs whose lock is free, of runs no longer recorded as
// a lock's holder, and of no run, and the live run's once its lock is free.
func TestFailUnfinishedLeavesLiveRunsAlone(t *testing.T) {
	t.Parallel()
	b := setupCoded(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO coded (id, attempt_started_at, attempt_run_id) VALUES
(1, now(), 10), (2, now(), 11), (3, now(), 12), (4, now(), NULL);
INSERT INTO run_locks (name, run_id) VALUES ('things shard 1/2', 10), ('things shard 0/2', 11)`); err != nil {
		t.Fatal(err)
	}
	lock, err := status.AcquireLock(b.ctx, b.pool.Config().ConnConfig, "things shard 1/2")
	if err != nil {
		t.Fatal(err)
	}
	c := status.Change{Actor: "t"}
	got, err := coded.FailUnfinished(b.ctx, b.pool, status.UnfinishedParams{Statuses: []status.Status{pending}}, c)
	var ids []int64
	for _, u := range got {
		ids = append(ids, u.ID)
	}
	if err != nil || join(ids) != "2,3,4" {
		t.Fatalf("while run 10 holds its lock: %v, %v; want records 2, 3 and 4", ids, err)
	}
	if err := lock.Release(b.ctx); err != nil {
		t.Fatal(err)
	}
	got, err = coded.FailUnfinished(b.ctx, b.pool, status.UnfinishedParams{Statuses: []status.Status{pending}}, c)
	if err != nil || len(got) != 1 || got[0].ID != 1 || got[0].RunID != 10 {
		t.Errorf("once run 10's lock is free: %+v, %v; want record 1", got, err)
	}
}
