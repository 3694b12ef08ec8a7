package status_test

import (
	"slices"
	"testing"

	"github.com/ingest-dev/ingest/internal/status"
)

func TestChildrenWaitingAndParentsReady(t *testing.T) {
	t.Parallel()
	b := setupTries(t)
	// Parents a and c done, b failed; children of a (2), b, c, and a missing parent z; one child
	// of c is already done.
	_, err := b.pool.Exec(b.ctx, `INSERT INTO tries (id, key, parent, status) VALUES
 (1, 'a', NULL, 'done'), (2, 'b', NULL, 'failed'), (3, 'c', NULL, 'done'),
 (10, 'a1', 'a', 'pending'), (11, 'b1', 'b', 'pending'), (12, 'a2', 'a', 'failed'),
 (13, 'z1', 'z', 'pending'), (14, 'c1', 'c', 'pending'), (15, 'c2', 'c', 'done')`)
	if err != nil {
		t.Fatal(err)
	}
	parent := status.ParentPick{Column: "parent", Machine: tries, Statuses: []status.Status{done}}
	tests := []struct {
		statuses []status.Status
		waiting  int64
		parents  []string
	}{
		{[]status.Status{pending}, 2, []string{"a", "c"}},         // b1 and z1 wait
		{[]status.Status{pending, failed}, 3, []string{"a", "c"}}, // b1, z1 and b itself (no parent)
		{[]status.Status{done}, 2, []string{"c"}},                 // parents a and c have no parent
	}
	for _, tt := range tests {
		n, err := tries.CountWaiting(b.ctx, b.pool, "", tt.statuses, parent)
		if err != nil {
			t.Fatal(err)
		}
		if n != tt.waiting {
			t.Errorf("CountWaiting(%v) = %d, want %d", tt.statuses, n, tt.waiting)
		}
		got, err := tries.Parents(b.ctx, b.pool, "", tt.statuses, parent)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.parents) {
			t.Errorf("Parents(%v) = %v, want %v", tt.statuses, got, tt.parents)
		}
	}
}
