package status

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// An open attempt belongs to the run that started it (attempt_run_id), and a run that is alive
// holds its lock. A run's lock covers its own records only: shards of a social sync ("social
// sync shard 1/4") run side by side, each with a lock of its own. (An unsharded sync and the
// shards, or shards of two counts, no longer run together: their lock sets exclude each other;
// the rule below does not depend on it.) FailUnfinished therefore counts the open attempts of
// runs that no longer hold their lock (ended, died, lost it) and of no run, never those of a
// run that is alive, whichever lock the caller holds.

// endedRuns returns the runs, among those with an attempt open in the selection where (its
// placeholders numbered from 1, args its arguments), that no longer hold their lock. An attempt
// is started only after its run has recorded itself as its lock's holder (run_locks, migration
// 00010), so a run found there without its lock, or no longer found there (a later run of the
// lock took it over), has ended for good: no later attempt of it can appear.
func (m *Machine) endedRuns(ctx context.Context, db DB, where string, args []any) ([]int64, error) {
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT DISTINCT attempt_run_id FROM %s WHERE %s AND attempt_run_id IS NOT NULL`, m.table(), where), args...)
	if err != nil {
		return nil, err
	}
	runs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	live, err := LiveRuns(ctx, db, runs)
	if err != nil {
		return nil, err
	}
	ended := runs[:0]
	for _, r := range runs {
		if !live[r] {
			ended = append(ended, r)
		}
	}
	return ended, nil
}

// Querier is the part of DB a look that writes nothing needs.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// LiveRuns returns which of runs hold a lock they are recorded the holder of: the advisory
// lock (LockKey of its name) is granted to a session in this database. A run that is not
// live has ended: its process is gone (killed, out of memory, node lost) or lost its lock,
// whatever its row in runs still says.
func LiveRuns(ctx context.Context, db Querier, runs []int64) (map[int64]bool, error) {
	rows, err := db.Query(ctx, `SELECT name, run_id FROM run_locks WHERE run_id = ANY($1)`, runs)
	if err != nil {
		return nil, fmt.Errorf("the locks of runs %v: %w", runs, err)
	}
	byKey := map[int64][]int64{}
	var keys []int64
	var name string
	var run int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &run}, func() error {
		k := LockKey(name)
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], run)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("the locks of runs %v: %w", runs, err)
	}
	live := map[int64]bool{}
	if len(keys) == 0 {
		return live, nil
	}
	rows, err = db.Query(ctx, `SELECT DISTINCT (l.classid::bigint << 32) | l.objid::bigint FROM pg_locks l
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND ((l.classid::bigint << 32) | l.objid::bigint) = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("the locks held of runs %v: %w", runs, err)
	}
	var key int64
	if _, err := pgx.ForEachRow(rows, []any{&key}, func() error {
		for _, r := range byKey[key] {
			live[r] = true
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("the locks held of runs %v: %w", runs, err)
	}
	return live, nil
}

// numbered formats where's placeholders (%d, one per argument) from 1.
func numbered(where string) string {
	n := strings.Count(where, "%d")
	nums := make([]any, n)
	for i := range nums {
		nums[i] = i + 1
	}
	return fmt.Sprintf(where, nums...)
}
