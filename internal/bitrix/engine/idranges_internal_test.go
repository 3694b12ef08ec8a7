package engine

import (
	"fmt"
	"testing"
)

// TestRangeWalkWorkers pins when a walk goes past Concurrency: only while its open ranges fit
// the bucket's burst, never past oneRound, and never for a Concurrency lowered below the default.
func TestRangeWalkWorkers(t *testing.T) {
	cases := []struct {
		concurrency, open, done int
		density                 float64
		want                    int
	}{
		{concurrency: 0, open: 10, density: 1, want: 10},       // 20k users: one round, not two
		{concurrency: 8, open: 42, density: 1, want: oneRound}, // 100k deals: capped at 32
		{concurrency: 8, open: 49, density: 1, want: oneRound}, // 49: the burst after the bounds
		{concurrency: 8, open: 50, density: 1, want: 8},
		{concurrency: 8, open: 82, density: 1, want: 8},            // 200k users: the bucket binds
		{concurrency: 8, open: 5, density: 1, want: 8},             // fewer ranges than workers
		{concurrency: 1, open: 4, density: 1, want: 1},             // lowered on purpose: kept
		{concurrency: 8, open: 10, done: 60, density: 1, want: 10}, // done ranges do not count
		{concurrency: 8, open: 10, density: 0, want: 1},            // IDs not numbers: in order
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("c=%d/open=%d/done=%d/density=%g", c.concurrency, c.open, c.done, c.density), func(t *testing.T) {
			w := &rangeWalk{g: &GetRun{Env: build(Config{Concurrency: c.concurrency}).env()}, density: c.density}
			for i := range c.open + c.done {
				w.ranges = append(w.ranges, &idRange{done: i < c.done})
			}
			if got := w.workers(); got != c.want {
				t.Errorf("workers() = %d, want %d", got, c.want)
			}
		})
	}
}
