package run_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/pgsession"
	"github.com/ingest-dev/ingest/internal/run"
)

// TestFenceOutPrefixesStopsARunOfTheFamily: a run that excludes a family of locks whose names
// are not all known (an unsharded social sync and the shards of every count) names their
// prefix; once it has started, a run of the family that lost its lock meanwhile writes nothing
// more, and the locks outside the family keep their holders.
func TestFenceOutPrefixesStopsARunOfTheFamily(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	ctx := context.Background()
	shard, other, whole := fencedOptions(t, url), fencedOptions(t, url), fencedOptions(t, url)
	shard.Command = "sync things shard 1/3"
	other.Command = "sync thingsmore"
	whole.Command, whole.FenceOutPrefixes = "sync things", []string{"sync things shard "}
	write := func(ctx context.Context, o run.Options, r *run.Run) error {
		_, err := o.Pool.Exec(ctx, `INSERT INTO status_history (machine, record_id, from_status, to_status, actor, run_id)
VALUES ('things', 1, 'a', 'b', $1, $2)`, r.Actor(), r.ID)
		return err
	}
	var otherID int64
	if err := run.Exec(ctx, other, func(ctx context.Context, r *run.Run) error { otherID = r.ID; return nil }); err != nil {
		t.Fatal(err)
	}
	var wholeErr error
	shardErr := run.Exec(ctx, shard, func(ctx context.Context, r *run.Run) error {
		if err := write(ctx, shard, r); err != nil {
			return err
		}
		wholeErr = run.Exec(ctx, whole, func(ctx context.Context, r *run.Run) error { return write(ctx, whole, r) })
		_ = write(ctx, shard, r)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Minute): // a bound for a hung test, not a timing claim
			return errors.New("the run was not stopped by its refused write")
		}
	})
	if wholeErr != nil {
		t.Fatalf("the run that fenced the family out: %v", wholeErr)
	}
	if !errors.Is(shardErr, pgsession.ErrFenced) {
		t.Fatalf("the fenced run of the family = %v, want ErrFenced", shardErr)
	}
	var n int
	if err := shard.Pool.QueryRow(ctx, `SELECT count(*) FROM status_history`).Scan(&n); err != nil || n != 2 {
		t.Errorf("writes = %d (%v), want 2: the fenced run's before the other started and the other's", n, err)
	}
	var holder int64
	if err := shard.Pool.QueryRow(ctx, `SELECT run_id FROM run_locks WHERE name = $1`, other.Command).Scan(&holder); err != nil || holder != otherID {
		t.Errorf("the lock outside the family is held by run %d (%v), want %d", holder, err, otherID)
	}
}
