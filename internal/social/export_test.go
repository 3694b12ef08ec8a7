package social

// EnsureShardIndex lets the benchmarks make a shard count's indexes before they time the
// first cycle's picks, as the count's first sync step would.
var EnsureShardIndex = (*Syncer).ensureShardIndex
