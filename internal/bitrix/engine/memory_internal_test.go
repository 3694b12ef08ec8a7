package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
)

// TestRangeWalkKeepsAnswersInTheMemoryBudget pins how many requests a walk sends before one
// ends: as many as their expected answers fit in half the memory limit, always at least one,
// and as many as there are free ranges while no row has been seen to size them by.
func TestRangeWalkKeepsAnswersInTheMemoryBudget(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		limit    int64
		rowBytes float64 // 0: no row seen yet
		want     int
	}{
		// A full request is 2,500 rows; held 4x: 10 MB for rows of 1,000 bytes.
		{limit: 50 * mb, rowBytes: 1000, want: 2},  // 25 MB budget: two of 10 MB
		{limit: 0, rowBytes: 1000, want: 10},       // 512 MiB: every free range
		{limit: 0, rowBytes: 10_000, want: 2},      // rows ten times larger: 100 MB each
		{limit: 1 * mb, rowBytes: 1000, want: 1},   // over budget alone: still one at a time
		{limit: 1 * mb, rowBytes: 0, want: 10},     // size unknown: not held back
		{limit: 400 * mb, rowBytes: 735, want: 10}, // deals under GOMEMLIMIT=400MiB
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("limit=%d/row=%g", c.limit, c.rowBytes), func(t *testing.T) {
			e := build(Config{MemoryLimit: c.limit, Log: slog.New(slog.DiscardHandler)})
			w := &rangeWalk{g: &GetRun{Env: e.env(), Ent: &Entity{Name: "users"}}, density: 1}
			for range 10 {
				w.ranges = append(w.ranges, &idRange{})
			}
			if c.rowBytes > 0 {
				w.size = rowSize{bytes: 50 * c.rowBytes, rows: 50}
			}
			var jobs []rangeJob
			for {
				job, ok, err := w.take(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				jobs = append(jobs, job)
			}
			if len(jobs) != c.want {
				t.Fatalf("took %d requests before one ended, want %d", len(jobs), c.want)
			}
			// One ending makes room for the next, and the held bytes come back to zero.
			w.release(jobs[0])
			if _, ok, _ := w.take(context.Background()); !ok && c.want < 10 {
				t.Errorf("no request after one ended")
			}
			for _, r := range w.ranges {
				r.busy = false
			}
		})
	}
}

// TestRowSizeIsTheMeanOfWhatCame checks the estimate a walk sizes its requests by.
func TestRowSizeIsTheMeanOfWhatCame(t *testing.T) {
	var s rowSize
	if got := s.held(50); got != 0 {
		t.Errorf("held with no rows = %g, want 0", got)
	}
	s.add([]json.RawMessage{[]byte(`{"ID":"1"}`), []byte(`{"ID":"12345678901"}`)}) // 10 and 20 bytes
	if got, want := s.held(2), 15.0*2*50*heldPerAnswerByte; got != want {
		t.Errorf("held(2 pages) = %g, want %g", got, want)
	}
}
