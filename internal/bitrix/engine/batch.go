package engine

import (
	"context"
	"slices"
	"sync"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// maxCommandRetries bounds how often the commands of one batch that the portal refused for its
// operating-time limit are sent again (the client waits out the pause before each).
const maxCommandRetries = 11

// batchEach runs one read command per key in as few batches as possible and hands each answer
// to fn. Commands refused for the operating-time limit are sent again once the client's pause
// is over, and commands an answer left without a result of their own (an error it did not tie
// to a command, or none) are sent again by rest.Settle, alone if need be; any other command
// failure, a command still without a result included (its error names it), goes to onErr, which
// decides whether it stops everything.
func (e *Engine) batchEach(ctx context.Context, cmds []rest.Command, fn func(key string, r *rest.Response) error, onErr func(key string, err error) error) error {
	for len(cmds) > 0 {
		chunk := cmds[:min(len(cmds), rest.MaxBatch)]
		cmds = cmds[len(chunk):]
		for try := 0; len(chunk) > 0; try++ {
			br, err := rest.Settle(ctx, e.source.Batch, chunk)
			if err != nil {
				return err
			}
			var again []rest.Command
			for _, cmd := range chunk {
				r, err := br.Response(cmd.Key)
				switch {
				case rest.HasCode(err, rest.CodeOperationTimeLimit) && try < maxCommandRetries:
					again = append(again, cmd)
				case err != nil:
					if err := onErr(cmd.Key, err); err != nil {
						return err
					}
				default:
					if err := fn(cmd.Key, r); err != nil {
						return err
					}
				}
			}
			chunk = again
		}
	}
	return nil
}

// defaultConcurrency is how many requests are in flight when Config.Concurrency is 0:
// enough that a portal answering a full batch in about a second keeps the rate limit, not its
// answer time, the bound (docs/benchmarks.md).
const defaultConcurrency = 8

// batchEachConcurrently is batchEach over independent commands, split into batches of
// rest.MaxBatch of which up to Concurrency are in flight at once: the rate limiter still spaces
// the requests, but the portal's time to answer one batch overlaps with the others'. fn and
// onErr are called one at a time; the first error stops the rest.
func (e *Engine) batchEachConcurrently(ctx context.Context, cmds []rest.Command, fn func(key string, r *rest.Response) error, onErr func(key string, err error) error) error {
	var mu sync.Mutex // serialises fn and onErr
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
	chunks := slices.Collect(slices.Chunk(cmds, rest.MaxBatch))
	return runPool(ctx, e.concurrency, queueJobs(chunks), func(ctx context.Context, chunk []rest.Command) error {
		return e.batchEach(ctx, chunk, lockedFn, lockedOnErr)
	}, nil)
}
