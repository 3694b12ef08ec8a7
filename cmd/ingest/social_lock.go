package main

import (
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/status"
)

// socialSyncLock is the lock of every social sync step (profiles, posts, comments, run,
// normalize): the unsharded run holds it exclusive, every shard shared, so the two never
// overlap and pick the same accounts (status.Pick locks no row: a run's lock set is what keeps
// it the only one working its accounts).
const socialSyncLock = "social sync"

// maxSocialShards bounds SOCIAL_SHARDS: a shard refuses to run beside a shard of any other
// count up to it. Far above what the platform's limits make useful (README "Choosing the shard
// count": 36 shards sync 300,000 accounts every 6 h).
const maxSocialShards = 1000

// socialShardsLock is held shared by every shard of count n.
func socialShardsLock(n int) string { return fmt.Sprintf("%s shards %d", socialSyncLock, n) }

// socialLocks is the lock set of a social sync step of shard index of count shards.
//
// Unsharded: "social sync" exclusive. It fences out every shard run recorded in run_locks
// (whatever its count), so one that lost its locks (frozen, cut off) writes nothing beside it.
//
// Sharded: its own "social sync shard I/N" (a second pod of the same index is refused),
// "social sync" shared (keeps the unsharded run out), and "social sync shards N" shared,
// refusing "social sync shards M" for every other M: shards of one count run side by side,
// shards of two counts (SOCIAL_SHARDS changed while pods of the old Job still run) split the
// accounts differently and would pick the same ones. It fences out the unsharded run that lost
// its lock.
//
// A dead shard may stay recorded the holder of "social sync" while the other shards hold it
// shared, which reads as alive to the attempt rule (status: a run holding a lock it is recorded
// the holder of). No run that counts its attempts sees that: the next run of its shard, the
// unsharded run and a shard of another count each claim "social sync" as they start.
func socialLocks(index, shards int) lockSet {
	if shards <= 1 {
		// The shard locks' common prefix: " shard 0/2" cut before its numbers.
		prefix := socialSyncLock + strings.TrimSuffix(metrics.ShardSuffix(0, 2), "0/2")
		return lockSet{name: socialSyncLock, fenceOutPrefixes: []string{prefix}}
	}
	count := status.SetLock{Name: socialShardsLock(shards), Shared: true}
	for m := 2; m <= maxSocialShards; m++ {
		if m != shards {
			count.Refuses = append(count.Refuses, socialShardsLock(m))
		}
	}
	return lockSet{
		name:     socialSyncLock + metrics.ShardSuffix(index, shards),
		also:     []status.SetLock{{Name: socialSyncLock, Shared: true}, count},
		fenceOut: []string{socialSyncLock},
	}
}
