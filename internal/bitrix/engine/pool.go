package engine

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"
)

// runPool is the engine's one worker pool: every walk, range read and import round runs its
// requests through it, so Concurrency means the same everywhere.
//
// next hands out the next job; it returns ok false when none is ready now. Jobs in flight may
// make more ready (a key walk puts back the keys whose walk goes on, an ID range is free again),
// so the pool then waits for one to end and asks again; with none in flight the work is done.
// ended, when set, is told of every job that ended, before next is asked again. next and ended
// are called one at a time from the caller's goroutine, so what they share needs no lock of its
// own; do runs on up to workers goroutines at once. The first error of do stops the rest
// (their context is cancelled); an error of next stops handing out jobs and is returned once
// the jobs in flight have ended; so is ctx's error when ctx ends between jobs.
func runPool[J any](ctx context.Context, workers int, next func(ctx context.Context) (job J, ok bool, err error),
	do func(ctx context.Context, job J) error, ended func(job J)) error {
	g, gctx := errgroup.WithContext(ctx)
	gctx, stop := context.WithCancel(gctx) // stopped by a failed job before it counts as ended
	defer stop()
	finished := make(chan J, workers) // never blocks: at most workers jobs are in flight
	busy := 0
	settle := func(j J) {
		busy--
		if ended != nil {
			ended(j)
		}
	}
	var nextErr error
loop:
	for {
		for busy >= workers { // no free worker: wait for one
			select {
			case j := <-finished:
				settle(j)
			case <-gctx.Done():
				break loop
			}
		}
		if gctx.Err() != nil {
			break
		}
		job, ok, err := next(gctx)
		if err != nil {
			nextErr = err
			break
		}
		if !ok {
			if busy == 0 {
				break
			}
			select {
			case j := <-finished:
				settle(j)
			case <-gctx.Done():
				break loop
			}
			continue
		}
		busy++
		g.Go(func() error {
			err := do(gctx, job)
			if err != nil {
				stop()
			}
			finished <- job
			return err
		})
	}
	if err := errors.Join(nextErr, g.Wait()); err != nil {
		return err
	}
	return ctx.Err() // stopped from outside between jobs
}

// queueJobs is next for a fixed list of independent jobs.
func queueJobs[J any](jobs []J) func(context.Context) (J, bool, error) {
	return func(context.Context) (J, bool, error) {
		var j J
		if len(jobs) == 0 {
			return j, false, nil
		}
		j, jobs = jobs[0], jobs[1:]
		return j, true, nil
	}
}

// requeue puts the items of a job that are not done back at the end of a walk's queue.
func requeue[T any](queue, job []T, done func(T) bool) []T {
	for _, it := range job {
		if !done(it) {
			queue = append(queue, it)
		}
	}
	return queue
}
