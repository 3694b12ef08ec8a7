package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestRunPoolRequeuesUntilEveryItemIsDone: a job's unfinished items come back, and the pool
// waits for jobs in flight before deciding the work is done.
func TestRunPoolRequeuesUntilEveryItemIsDone(t *testing.T) {
	t.Parallel()
	type item struct{ left int } // pages still to read
	var queue []*item
	for i := range 20 {
		queue = append(queue, &item{left: 1 + i%4})
	}
	var inFlight, most, jobs atomic.Int64
	take := func(context.Context) ([]*item, bool, error) {
		if len(queue) == 0 {
			return nil, false, nil
		}
		n := min(len(queue), 3)
		job := append([]*item(nil), queue[:n]...)
		queue = queue[n:]
		return job, true, nil
	}
	do := func(_ context.Context, job []*item) error {
		now := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		jobs.Add(1)
		for _, it := range job {
			it.left--
		}
		return nil
	}
	err := runPool(context.Background(), 4, take, do, func(job []*item) {
		queue = requeue(queue, job, func(it *item) bool { return it.left == 0 })
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(queue) != 0 {
		t.Errorf("%d items left in the queue", len(queue))
	}
	// 20 items need 50 pages in all, 3 to a job at the most.
	if jobs.Load() < 17 {
		t.Errorf("%d jobs for 50 pages, 3 to a job", jobs.Load())
	}
	if most.Load() > 4 {
		t.Errorf("%d jobs in flight at once, want at most 4", most.Load())
	}
}

func TestRunPoolStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var started atomic.Int64
	err := runPool(context.Background(), 2, queueJobs([]int{1, 2, 3, 4, 5, 6, 7, 8}), func(ctx context.Context, j int) error {
		started.Add(1)
		if j == 2 {
			return boom
		}
		<-ctx.Done() // the others run until the failure cancels them
		return ctx.Err()
	}, nil)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	if n := started.Load(); n != 2 {
		t.Errorf("%d jobs started, want 2: none after the failure", n)
	}
	// An error of next stops handing out jobs and is returned.
	bad := errors.New("pick failed")
	calls := 0
	err = runPool(context.Background(), 2, func(context.Context) (int, bool, error) {
		calls++
		if calls == 3 {
			return 0, false, bad
		}
		return calls, true, nil
	}, func(context.Context, int) error { return nil }, nil)
	if !errors.Is(err, bad) || calls != 3 {
		t.Errorf("err = %v after %d calls, want the pick's error after 3", err, calls)
	}
	// A context ended from outside between jobs is an error too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runPool(ctx, 2, queueJobs([]int{1}), func(context.Context, int) error { return nil }, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled pool: err = %v", err)
	}
}
