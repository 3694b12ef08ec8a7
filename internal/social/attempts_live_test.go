package social_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/social"
)

// An unsharded sync holds the lock "social sync", a sharded one "social sync shard I/N". Their
// lock sets keep the commands apart (cmd/ingest socialLocks), but the rule for attempts in
// flight does not rely on it: here the runs take only their own locks, and the unsharded run counts the open attempt of a shard's run that ended
// (its lock is free: the process died) as a failed one, and leaves alone the attempt of a
// shard's run that still holds its lock: that attempt is in flight, not unfinished.
func TestUnshardedSyncLeavesLiveShardAttemptsAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, graphfake.Options{Seed: 26, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "c_dead", Connected: true, Posts: 1},
		{Username: "c_live", Connected: true, Posts: 1},
	}})
	e.addAll()
	var dead, live int64
	if err := e.pool.QueryRow(e.ctx, `SELECT min(id), max(id) FROM social_accounts`).Scan(&dead, &live); err != nil || dead%2 == live%2 {
		t.Fatalf("account ids %d, %d: want them in two shards (%v)", dead, live, err)
	}
	shardRun := func(id int64, fn func(ctx context.Context, r *run.Run) error) {
		t.Helper()
		suffix := fmt.Sprintf(" shard %d/2", id%2)
		err := run.Exec(e.ctx, run.Options{Pool: e.pool, Command: "social sync profiles" + suffix, LockName: "social sync" + suffix,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, func(ctx context.Context, r *run.Run) error {
			if ok, err := social.Accounts.StartAttempt(ctx, e.pool, id, social.ProfilePending, r.ID); err != nil || !ok {
				return fmt.Errorf("start account %d: %v %w", id, ok, err)
			}
			return fn(ctx, r)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The dead shard's run ends with its attempt open, as a process killed during it leaves it.
	shardRun(dead, func(context.Context, *run.Run) error { return nil })
	shardRun(live, func(ctx context.Context, _ *run.Run) error {
		st, err := e.syncer(0, 0).SyncProfiles(ctx)
		if err != nil || st.Unfinished != 1 {
			t.Errorf("unsharded profiles: %+v, %v; want only the dead run's attempt counted", st, err)
		}
		return nil
	})
	for id, want := range map[int64]int{dead: 1, live: 0} {
		if n := e.count(`SELECT count(*) FROM status_history WHERE machine = $1 AND record_id = $2 AND reason LIKE '%never finished%'`,
			social.Accounts.Name, id); n != want {
			t.Errorf("account %d: %d deaths counted, want %d", id, n, want)
		}
	}
}
