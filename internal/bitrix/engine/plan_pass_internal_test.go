package engine

import (
	"slices"
	"testing"
)

// walkCalls batches pages as a KeyWalk's take does: the next page of up to 50 keys a call, keys
// not done at the end of the queue, and chained pages of a key when few keys are left.
func TestWalkCalls(t *testing.T) {
	t.Parallel()
	ones := func(n int) []int { return slices.Repeat([]int{1}, n) }
	for _, c := range []struct {
		name  string
		pages []int
		chain int
		want  int
	}{
		{"a page each, 100 keys", ones(100), 1, 2},
		{"a page each, 101 keys", ones(101), 1, 3},
		{"one long key among 49 short ones", append([]int{6}, ones(49)...), 1, 6},
		{"one long key, chained 8 pages a call", []int{6}, 8, 1},
		{"two keys of 30 pages, chained 8 a call", []int{30, 30}, 8, 4},
		{"no keys", nil, 1, 0},
	} {
		if got := walkCalls(c.pages, c.chain); got != c.want {
			t.Errorf("%s: %d calls, want %d", c.name, got, c.want)
		}
	}
}
