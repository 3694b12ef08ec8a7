package status_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/status"
)

// cycles is tries whose done records come due again: synced accounts waiting for their next
// sync, jobs waiting for their next poll.
var cycles = &status.Machine{
	Name:     "tries",
	Table:    "tries",
	Statuses: things.Statuses,
	Auto:     append(slices.Clone(things.Auto), status.Transition{From: done, To: done}, status.Transition{From: done, To: pending}),
	Waiting:  []status.Status{done},
}

func TestWaitingStatusIsPickedWhenDue(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id) VALUES (1), (2), (3)`); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	c := status.Change{Actor: "test", Due: t0.Add(time.Hour)}
	if moved, err := cycles.MoveMany(b.ctx, b.pool, []int64{1, 2}, pending, done, c); err != nil || len(moved) != 2 {
		t.Fatalf("move to done: %v %v", moved, err)
	}
	// Record 3 enters done without a time: due at once.
	if _, err := cycles.Move(b.ctx, b.pool, 3, pending, done, status.Change{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	pick := func(at time.Time) []int64 {
		ids, err := cycles.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{done}, Limit: 10, DueBy: at})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := pick(t0); !slices.Equal(got, []int64{3}) {
		t.Errorf("due at t0: %v, want [3]", got)
	}
	if got := pick(t0.Add(time.Hour)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("due an hour later: %v, want [1 2 3]", got)
	}
	// Without DueBy the status is picked as any other.
	ids, err := cycles.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{done}, Limit: 10})
	if err != nil || len(ids) != 3 {
		t.Errorf("pick without DueBy: %v %v", ids, err)
	}
	// Moving a waiting record again reschedules it; leaving the status keeps nothing stale
	// that a later move into it would inherit.
	if _, err := cycles.Move(b.ctx, b.pool, 3, done, done, status.Change{Actor: "test", Due: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := pick(t0.Add(time.Hour)); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("after rescheduling 3: %v, want [1 2]", got)
	}
	if _, err := cycles.Move(b.ctx, b.pool, 1, done, pending, status.Change{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cycles.Move(b.ctx, b.pool, 1, pending, done, status.Change{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if got := pick(t0); !slices.Equal(got, []int64{1}) {
		t.Errorf("record 1 back in done without a time: %v, want [1]", got)
	}
}

func TestPickShards(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id, parent) SELECT g, (g / 10)::text FROM generate_series(1, 100) g`); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for index := range 3 {
		ids, err := tries.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{pending}, Limit: 200,
			Shard: &status.Shard{Column: "id", Count: 3, Index: index}})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if int(id%3) != index {
				t.Errorf("shard %d picked %d", index, id)
			}
			seen[id]++
		}
	}
	// The shards together are the whole table, each record in exactly one.
	for id := int64(1); id <= 100; id++ {
		if seen[id] != 1 {
			t.Errorf("record %d picked by %d shards, want 1", id, seen[id])
		}
	}
	_, err := tries.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{pending}, Limit: 1,
		Shard: &status.Shard{Column: "id", Count: 2, Index: 2}})
	if err == nil || !strings.Contains(err.Error(), "shard 2 of 2") {
		t.Errorf("shard out of range = %v, want an error", err)
	}
}
