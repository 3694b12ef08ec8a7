package rest

import (
	"slices"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/retry"
)

// The refusals' schedule of the client's defaults: the spec's delays, the first raised to one
// drain interval, then 6 s until the waits reach 50 s, twice a full 2/50 bucket's draining;
// Enterprise's 5/250 bucket takes longer to drain, and gets longer.
func TestLimitScheduleCoversTwoDrainsOfAFullBucket(t *testing.T) {
	s := time.Second
	p := limitSchedule(retry.Default(), DefaultRate(), s/2)
	want := []time.Duration{s / 2, 2 * s, 6 * s, 6 * s, 6 * s, 6 * s, 6 * s, 6 * s, 6 * s, 6 * s}
	if !slices.Equal(p.Delays, want) || p.Jitter != retry.Default().Jitter {
		t.Errorf("2/50: delays %v jitter %v, want %v with the default jitter", p.Delays, p.Jitter, want)
	}
	enterprise := limitSchedule(retry.Default(), Rate{PerSecond: 5, Burst: 250}, s/5)
	var total time.Duration
	for _, d := range enterprise.Delays {
		total += d
	}
	if total < 100*s || total >= 106*s {
		t.Errorf("5/250: waits add up to %v, want the first sum past 100 s", total)
	}
	if none := limitSchedule(retry.Policy{Delays: []time.Duration{}}, Rate{PerSecond: 2, Burst: 5}, s/2); len(none.Delays) != 10 {
		t.Errorf("no schedule: %v, want drain intervals for 5 s", none.Delays)
	}
}

// TestDescendingKeepsTheDocumentedCase: the reversed order of a listing keeps the case its
// method documents (tasks.task.list lists asc/desc, the CRM's lists ASC/DESC).
func TestDescendingKeepsTheDocumentedCase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"asc", "desc"}, {"ASC", "DESC"}, {"Asc", "DESC"}, {"desc", "desc"}} {
		got := descending(map[string]any{"ID": tc.in})["ID"]
		if got != tc.want {
			t.Errorf("descending(%q) = %v, want %q", tc.in, got, tc.want)
		}
	}
}
