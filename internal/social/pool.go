package social

import "github.com/jackc/pgx/v5/pgxpool"

// TunePool sets what the social commands' connections need: custom plans, no parallel query,
// no JIT. Their statements are small index walks whose best plan depends on the values: a
// generic plan of a pick (pgx prepares and caches statements) cannot know which status is
// nearly empty and which holds a million rows, and with a shard's modulo and a due time among
// the conditions the planner misjudges how many rows match and starts parallel workers. Either
// costs 100-400 ms a pick at 10^6 rows instead of about 1 ms (docs/benchmarks.md).
func TunePool(cfg *pgxpool.Config) {
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	cfg.ConnConfig.RuntimeParams["max_parallel_workers_per_gather"] = "0"
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
}
