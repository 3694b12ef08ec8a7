// Command crashchild is one run of a small pipeline for the crash tests of package run: under
// the run lock, with the pool and bounds cmd/ingest gives every command (pgsession), it moves
// the records of crash_items from NEW to DONE through status.Machine, a batch per transaction,
// and sits in each transaction for CRASH_HOLD after its first move, so that a test can freeze
// or cut it there. Built by the tests without the race detector.
//
// It prints "phase run" once its run is recorded (it holds the lock and is the lock's recorded
// holder), "phase tx" inside each transaction after its first move, and "phase done" at the
// end. It exits 1 when its run fails, 75 when another run holds the lock.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/pgsession"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// machine is the child's pipeline: NEW -> DONE.
var machine = &status.Machine{Name: "crash", Table: "crash_items", Statuses: []status.Status{"NEW", "DONE"},
	Auto: []status.Transition{{From: "NEW", To: "DONE"}}}

func main() {
	err := work(context.Background())
	switch {
	case errors.Is(err, status.ErrLocked):
		os.Exit(75)
	case err != nil:
		fmt.Fprintln(os.Stderr, "crashchild:", err)
		os.Exit(1)
	}
	fmt.Println("phase done")
}

func work(ctx context.Context) error {
	hold, err := time.ParseDuration(os.Getenv("CRASH_HOLD"))
	if err != nil {
		return fmt.Errorf("CRASH_HOLD: %w", err)
	}
	lockCheck, err := time.ParseDuration(os.Getenv("CRASH_LOCK_CHECK"))
	if err != nil {
		return fmt.Errorf("CRASH_LOCK_CHECK: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(os.Getenv("CRASH_DB"))
	if err != nil {
		return err
	}
	fence := &pgsession.Fence{}
	pgsession.ConfigurePool(cfg, pgsession.Defaults(), fence)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	o := run.Options{Pool: pool, Fence: fence, Command: "crash things", LockCheckInterval: lockCheck,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	return run.Exec(ctx, o, func(ctx context.Context, r *run.Run) error {
		fmt.Println("phase run")
		p := status.PickParams{Statuses: []status.Status{"NEW"}, Limit: 20}
		for {
			ids, err := machine.Pick(ctx, pool, p)
			if err != nil || len(ids) == 0 {
				return err
			}
			p.After = ids[len(ids)-1]
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				for i, id := range ids {
					if _, err := machine.Move(ctx, tx, id, "NEW", "DONE", status.Change{Actor: r.Actor(), RunID: r.ID}); err != nil {
						return err
					}
					if i == 0 {
						fmt.Println("phase tx")
						time.Sleep(hold)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	})
}
