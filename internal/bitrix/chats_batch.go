package bitrix

import (
	"context"
	"slices"
	"sync"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// concurrency is the cap on batches in flight (BITRIX_CONCURRENCY).
func (e *Engine) concurrency() int {
	if e.Concurrency > 0 {
		return e.Concurrency
	}
	return defaultConcurrency
}

// batchEachConcurrently is batchEach over independent commands, split into batches of
// rest.MaxBatch of which up to Concurrency are in flight at once: the rate limiter still spaces
// the requests, but the portal's time to answer one batch overlaps with the others'. fn and
// onErr are called one at a time; the first error stops the rest.
func (e *Engine) batchEachConcurrently(ctx context.Context, cmds []rest.Command, fn func(key string, r *rest.Response) error, onErr func(key string, err error) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // serialises fn, onErr and first
	var first error
	lockedFn := func(key string, r *rest.Response) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(key, r)
	}
	lockedOnErr := func(key string, err error) error {
		mu.Lock()
		defer mu.Unlock()
		return onErr(key, err)
	}
	slots := make(chan struct{}, e.concurrency())
	var wg sync.WaitGroup
	for chunk := range slices.Chunk(cmds, rest.MaxBatch) {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := e.batchEach(ctx, chunk, lockedFn, lockedOnErr); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err() // the caller's cancellation: cancel here only follows a failure
}
