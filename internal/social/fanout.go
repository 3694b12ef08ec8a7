package social

import (
	"context"
	"slices"
	"sync"
)

// DefaultConcurrency is how many accounts (or, in the comments step, posts) a shard works at
// once when Syncer.Concurrency is zero. A shard mostly waits for the platform (answers take
// 100-500 ms, the database work of a page a few ms): one record at a time syncs about one
// account a second (docs/benchmarks.md), eight overlap those waits.
const DefaultConcurrency = 8

// MaxConcurrency bounds Syncer.Concurrency: more records in flight than that would hold more
// connections and memory than one pod should, and the platform's budgets are per app and per
// token, not per connection: more shards, not more in flight, is the way past it.
const MaxConcurrency = 64

func (s *Syncer) concurrency() int {
	switch {
	case s.Concurrency <= 0:
		return DefaultConcurrency
	case s.Concurrency > MaxConcurrency:
		return MaxConcurrency
	}
	return s.Concurrency
}

// add adds the figures of o (one record's) to st.
func (st *Stats) add(o Stats) {
	st.Records += o.Records
	for k, n := range o.Outcomes {
		if st.Outcomes == nil {
			st.Outcomes = map[string]int{}
		}
		st.Outcomes[k] += n
	}
	st.Calls += o.Calls
	st.Pages += o.Pages
	st.Items += o.Items
	st.Restarts += o.Restarts
	for _, k := range o.Parked {
		if !slices.Contains(st.Parked, k) {
			st.Parked = append(st.Parked, k)
		}
	}
	st.Incomplete += o.Incomplete
	st.Repairs += o.Repairs
	st.Unfinished += o.Unfinished
	st.Truncated = st.Truncated || o.Truncated
}

// fanOut works the records pick yields, batch after batch (keyset: each pick starts after the
// last id of the one before, so no record is handed out twice in a run), on up to
// s.concurrency() goroutines at once. Each record is worked by one call of work, with Stats of
// its own added to st when it returns. A work that asks to stop (the context ended, the token
// key is wrong) or fails stops the handing out; the records in flight finish, and fanOut
// returns the first error (ctx.Err() after a stop, with st.Truncated set). batch is the pick's
// limit: a shorter pick is the last.
//
// After a run that died (st.Unfinished: attempts of an earlier run never finished), the step
// works one record at a time: a process killed with 8 records in flight charges each of them
// a failed attempt, and a record that kills the process every time must not take its
// neighbours' retries with it run after run.
func (s *Syncer) fanOut(ctx context.Context, st *Stats, batch int, pick func(after int64) ([]int64, error),
	work func(ctx context.Context, id int64, st *Stats) (stop bool, err error)) error {
	workers := s.concurrency()
	if st.Unfinished > 0 {
		workers = 1
		s.Log.Warn("an earlier run died with attempts in flight: this step works one record at a time", "unfinished", st.Unfinished)
	}
	var (
		mu      sync.Mutex
		first   error
		stopped bool
		wg      sync.WaitGroup
	)
	halted := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stopped || first != nil
	}
	ids := make(chan int64)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				var own Stats
				stop, err := work(ctx, id, &own)
				mu.Lock()
				st.add(own)
				if err != nil && first == nil {
					first = err
				}
				stopped = stopped || stop
				mu.Unlock()
			}
		}()
	}
	perr := func() error {
		var after int64
		for {
			got, err := pick(after)
			if err != nil || len(got) == 0 {
				return err
			}
			for _, id := range got {
				if err := ctx.Err(); err != nil {
					return err
				}
				if halted() {
					return nil
				}
				ids <- id
			}
			after = got[len(got)-1]
			mu.Lock()
			s.Log.Info("batch handed out", "records", st.Records, "calls", st.Calls, "pages", st.Pages, "items", st.Items, "outcomes", st.Outcomes)
			mu.Unlock()
			if len(got) < batch {
				return nil
			}
			if err := s.pause(ctx); err != nil {
				return err
			}
		}
	}()
	close(ids)
	wg.Wait()
	switch {
	case first != nil:
		return first
	case stopped:
		st.Truncated = true
		return ctx.Err()
	}
	return perr
}
