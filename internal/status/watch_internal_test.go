package status

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A check slower than the interval is no loss: the watcher waits for its answer up to the
// timeout (the dead-peer bound) and goes on; the first real failure is reported once.
func TestWatchWaitsForASlowCheck(t *testing.T) {
	t.Parallel()
	const interval = 10 * time.Millisecond
	var calls atomic.Int32
	failed := errors.New("lock gone")
	check := func(ctx context.Context) error {
		switch calls.Add(1) {
		case 1, 2:
			// Slower than five intervals, but answered: a loaded server, not a lost lock.
			select {
			case <-time.After(5 * interval):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		case 3:
			return nil
		default:
			return failed
		}
	}
	lost := make(chan error, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch(context.Background(), interval, time.Hour, check, func(err error) { lost <- err })
	}()
	<-done
	if n := calls.Load(); n != 4 {
		t.Errorf("checks = %d, want 4 (two slow, one quick, one failing)", n)
	}
	if len(lost) != 1 {
		t.Fatalf("lost reported %d times, want once", len(lost))
	}
	if err := <-lost; !errors.Is(err, failed) {
		t.Errorf("lost = %v, want the check's error", err)
	}
}

// A check that does not answer within the timeout is a loss; one cut short by the watcher's
// own end is not.
func TestWatchTimeoutAndStop(t *testing.T) {
	t.Parallel()
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	lost := make(chan error, 1)
	watch(context.Background(), time.Millisecond, 20*time.Millisecond, hang, func(err error) { lost <- err })
	if err := <-lost; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("lost = %v, want the check's deadline", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 1)
	stopping := func(cctx context.Context) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-cctx.Done()
		return cctx.Err()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch(ctx, time.Millisecond, time.Hour, stopping, func(err error) { t.Errorf("lost after stop: %v", err) })
	}()
	<-started
	cancel()
	<-done
}
