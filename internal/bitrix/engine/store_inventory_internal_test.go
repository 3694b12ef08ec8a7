package engine

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

// TestLogPagesRangesEndingAtOnce ends the last two open ID ranges of a pass in two transactions
// that overlap: the second one's inventory update is already waiting on the first one's row lock
// when the first commits. Whichever commits last must see both ranges done and complete the get
// (the inventory's completion was once computed on a snapshot taken before the wait, so each saw
// the other's range open and get_complete stayed false after a complete get).
func TestLogPagesRangesEndingAtOnce(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, it never passes
	defer cancel()
	const entity = "things"
	inv, err := NewStore(pool).startPass(ctx, entity, 0)
	if err != nil {
		t.Fatal(err)
	}
	ranges := []*idRange{{lo: "0", hi: "500", cursor: "0"}, {lo: "500", hi: "", cursor: "500"}}
	if err := NewStore(pool).saveRanges(ctx, entity, inv.Pass, ranges); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{}, 2)    // a range's row is updated, its transaction still open
	firstLogged := make(chan struct{}) // the first transaction holds the inventory row
	secondWaits := make(chan struct{}) // the second transaction waits on that row's lock
	end := func(r *idRange, before, after func() error) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE bitrix_get_ranges SET cursor = hi, done = true
WHERE entity = $1 AND pass = $2 AND lo = $3`, entity, inv.Pass, r.lo); err != nil {
				return err
			}
			ended <- struct{}{}
			if err := before(); err != nil {
				return err
			}
			page := PageRecord{Pass: inv.Pass, Cursor: r.lo, Next: r.hi, Count: 10}
			if err := NewStore(tx).logPages(ctx, entity, 0, inv.Pass, []PageRecord{page}, nil, false); err != nil {
				return err
			}
			return after()
		})
	}
	both := func() error {
		for range 2 {
			select {
			case <-ended:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	wait := func(c chan struct{}) func() error {
		return func() error {
			select {
			case <-c:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	var g errgroup.Group
	var bothEnded = make(chan struct{})
	g.Go(func() error {
		return end(ranges[0], func() error {
			if err := both(); err != nil {
				return err
			}
			close(bothEnded)
			return nil
		}, func() error {
			close(firstLogged)
			return wait(secondWaits)()
		})
	})
	g.Go(func() error {
		return end(ranges[1], func() error {
			if err := wait(bothEnded)(); err != nil {
				return err
			}
			return wait(firstLogged)()
		}, func() error { return nil })
	})
	g.Go(func() error {
		if err := wait(firstLogged)(); err != nil {
			return err
		}
		for {
			var waiting bool
			err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
			if err != nil {
				return err
			}
			if waiting {
				close(secondWaits)
				return nil
			}
			select {
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	got, err := NewStore(pool).loadInventory(ctx, entity)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Complete || got.FinishedAt == nil || got.PassRows != 20 {
		t.Errorf("after both ranges ended: complete %v, finished at %v, pass rows %d; want complete, finished, 20",
			got.Complete, got.FinishedAt, got.PassRows)
	}
}
