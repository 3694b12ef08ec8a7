package social_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/status"
)

// BenchmarkSyncCycle runs full sync cycles (profiles, posts, comments, normalize) of generated
// accounts on S shards at once (S = 1, 4, 16), each shard a goroutine with a pool of its own
// (as a pod has), against the fake Graph API answering in SOCIAL_SCALE_LATENCY (default 200
// ms), three cycles in a row (the shards' clock moved on by the sync interval between two, so
// every account falls due as it would in production: no row is touched to make it due), and
// reports per cycle:
// wall, accounts per second per shard, Graph API calls against the minimum, rows and bytes
// written per account (raw and normalized, indexes included), peak connections, the process's
// peak RSS (the fake and every shard: they share one process), and the cost of a full pick of
// one shard's accounts and of its waiting posts as the tables grow.
//
// SOCIAL_SCALE_ACCOUNTS_PER_SHARD (default 50) sizes each S's run at that many accounts per
// shard; SOCIAL_SCALE_ACCOUNTS instead gives every S the same number, or each S its own
// ("1=2000,16=100000": one shard's rate from fewer accounts, in the same run); SOCIAL_SCALE_SHARDS
// ("1,4,16") the shard counts; SOCIAL_SCALE_CONCURRENCY each shard's Syncer.Concurrency
// (default DefaultConcurrency). The figures are in docs/benchmarks.md.
//
//	SOCIAL_SCALE_ACCOUNTS_PER_SHARD=100 scripts/with-pg.sh go test -run '^$' -bench BenchmarkSyncCycle -benchtime 1x -timeout 90m ./internal/social/
func BenchmarkSyncCycle(b *testing.B) {
	latency := 200 * time.Millisecond
	if v := os.Getenv("SOCIAL_SCALE_LATENCY"); v != "" {
		var err error
		if latency, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	perShard, fixed := envInt(b, "SOCIAL_SCALE_ACCOUNTS_PER_SHARD", 50), accountsByShards(b)
	shardCounts := []int{1, 4, 16}
	if v := os.Getenv("SOCIAL_SCALE_SHARDS"); v != "" {
		shardCounts = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("SOCIAL_SCALE_SHARDS=%q", v)
			}
			shardCounts = append(shardCounts, n)
		}
	}
	for _, shards := range shardCounts {
		n := perShard * shards
		if f, ok := fixed[shards]; ok {
			n = f
		} else if f, ok := fixed[0]; ok {
			n = f
		}
		b.Run(fmt.Sprintf("accounts=%d/shards=%d", n, shards), func(b *testing.B) {
			for range b.N {
				runCycles(b, n, shards, latency)
			}
		})
	}
}

// accountsByShards reads SOCIAL_SCALE_ACCOUNTS: a number for every shard count (key 0), or
// shards=accounts pairs.
func accountsByShards(b *testing.B) map[int]int {
	v := os.Getenv("SOCIAL_SCALE_ACCOUNTS")
	if v == "" {
		return nil
	}
	if !strings.Contains(v, "=") {
		return map[int]int{0: envInt(b, "SOCIAL_SCALE_ACCOUNTS", 0)}
	}
	out := map[int]int{}
	for _, pair := range strings.Split(v, ",") {
		s, a, _ := strings.Cut(pair, "=")
		shards, err1 := strconv.Atoi(s)
		accounts, err2 := strconv.Atoi(a)
		if err1 != nil || err2 != nil || shards < 1 || accounts < 1 {
			b.Fatalf("SOCIAL_SCALE_ACCOUNTS=%q: want a number or shards=accounts pairs", v)
		}
		out[shards] = accounts
	}
	return out
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

// runCycles is one run of BenchmarkSyncCycle: n accounts, shards shards, three cycles.
func runCycles(b *testing.B, n, shards int, latency time.Duration) {
	concurrency := envInt(b, "SOCIAL_SCALE_CONCURRENCY", social.DefaultConcurrency)
	e := newEnv(b, graphfake.Options{Seed: 34, GeneratedAccounts: n, NoFixtureAccounts: true, Latency: latency})
	addGenerated(e)
	minimum := 0
	for i := range n {
		a, _ := e.fake.Describe(graphfake.GeneratedUsername(i))
		minimum += a.MinimumCalls
	}
	// The shards' clock: a cycle starts an interval after the previous one, as a CronJob's runs
	// do, without waiting for it.
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	// Each shard has a pool of its own, as each pod has.
	syncers := make([]*social.Syncer, shards)
	for i := range shards {
		count := shards
		if shards == 1 {
			count = 0 // unsharded, as SOCIAL_SHARDS=1 runs
		}
		s := e.syncer(i, count)
		cfg := e.pool.Config().Copy()
		pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		// The logs of thousands of accounts would be held in memory by the test's buffer.
		quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
		s.Pool, s.Gate.Pool, s.Log, s.Gate.Log = pool, pool, quiet, quiet
		s.Concurrency, s.Now = concurrency, now
		syncers[i] = s
	}
	if shards > 1 {
		// The indexes of the shard count, made by the first step of the first cycle, are timed
		// from the first cycle's picks on.
		if err := social.EnsureShardIndex(syncers[0], e.ctx); err != nil {
			b.Fatal(err)
		}
	}
	for cycle := 1; cycle <= 3; cycle++ {
		if cycle > 1 {
			// The interval has passed: every synced account is due again.
			skew.Add(int64(social.DefaultInterval + time.Second))
		}
		before := measureStore(b, e)
		calls := e.fake.Stats().Requests
		pickAccounts, pickPosts, pagesAccounts, pagesPosts := pickCost(b, e, shards, now())
		resetPeakRSS()
		conns := watchConnections(e)
		cpuBefore, pgBefore := processCPU(), postgresCPU(b, e)
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, shards)
		for i, s := range syncers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, step := range []func(context.Context) (social.Stats, error){s.SyncProfiles, s.SyncPosts, s.SyncComments, s.Normalize} {
					if _, err := step(e.ctx); err != nil {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				b.Fatalf("shard %d, cycle %d: %v", i, cycle, err)
			}
		}
		wall := time.Since(start)
		cpu, pgCPU := processCPU()-cpuBefore, postgresCPU(b, e)-pgBefore
		peakConns := conns()
		after := measureStore(b, e)
		calls = e.fake.Stats().Requests - calls
		name := fmt.Sprintf("c%d-", cycle)
		b.ReportMetric(wall.Seconds(), name+"wall-s")
		b.ReportMetric(float64(n)/wall.Seconds()/float64(shards), name+"accounts/s/shard")
		b.ReportMetric(float64(calls)/float64(n), name+"calls/account")
		if cycle == 1 {
			b.ReportMetric(float64(calls)/float64(minimum), name+"calls/minimum")
		}
		b.ReportMetric(float64(after.rawRows-before.rawRows)/float64(n), name+"raw-rows/account")
		b.ReportMetric(float64(after.rawBytes-before.rawBytes)/float64(n), name+"raw-B/account")
		b.ReportMetric(float64(after.normRows-before.normRows)/float64(n), name+"norm-rows/account")
		b.ReportMetric(float64(after.normBytes-before.normBytes)/float64(n), name+"norm-B/account")
		b.ReportMetric(float64(peakConns), name+"peak-conns")
		b.ReportMetric(cpu.Seconds()*1000/float64(n), name+"process-cpu-ms/account")
		b.ReportMetric(pgCPU.Seconds()*1000/float64(n), name+"postgres-cpu-ms/account")
		b.ReportMetric(float64(peakRSS())/(1<<20), name+"process-peak-RSS-MiB")
		b.ReportMetric(float64(pickAccounts.Microseconds())/1000, name+"pick-accounts-ms")
		b.ReportMetric(float64(pickPosts.Microseconds())/1000, name+"pick-posts-ms")
		b.ReportMetric(float64(pagesAccounts), name+"pick-accounts-pages")
		b.ReportMetric(float64(pagesPosts), name+"pick-posts-pages")
		b.Logf("cycle %d: %d accounts on %d shards in %s, %d calls (minimum of a first cycle %d), store %+v -> %+v, peak %d connections, pick %s/%s (%d/%d pages), CPU of the process %s, of Postgres %s",
			cycle, n, shards, wall.Round(time.Millisecond), calls, minimum, before, after, peakConns, pickAccounts, pickPosts, pagesAccounts, pagesPosts, cpu, pgCPU)
	}
	// How many of the state tables' updates stayed on their page (heap-only: no index entry).
	// The statistics are flushed by the backends within a second or so: a close figure.
	for _, t := range []string{"social_accounts", "social_posts"} {
		var upd, hot int64
		if err := e.pool.QueryRow(e.ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1`, t).Scan(&upd, &hot); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %d updates, %d heap-only", t, upd, hot)
	}
	var pending int
	if err := e.pool.QueryRow(e.ctx, `SELECT (SELECT count(*) FROM social_accounts WHERE status IN ('profile_pending', 'posts_pending', 'sync_retry'))
  + (SELECT count(*) FROM social_posts WHERE status IN ('comments_pending', 'comments_retry', 'fetched'))`).Scan(&pending); err != nil {
		b.Fatal(err)
	}
	if pending != 0 {
		b.Errorf("%d accounts and posts left pending after three cycles", pending)
	}
}

// addGenerated registers the fake's generated accounts as the accounts file does: connected
// ones first (the oldest is the viewer of the others), then the others; after the first, each
// kind by eight at once (10^5 accounts one by one take minutes).
func addGenerated(e *env) {
	e.t.Helper()
	first := true
	for _, connected := range []bool{true, false} {
		work := make(chan social.NewAccount)
		errs := make(chan error, 8)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for na := range work {
					if _, err := social.Add(e.ctx, e.pool, e.sealer, na, "bench"); err != nil {
						errs <- fmt.Errorf("add %s%s: %w", na.Username, na.IGUserID, err)
						return
					}
				}
			}()
		}
		failed := false
		for i := range e.fake.GeneratedAccounts() {
			a := e.fake.Generated(i)
			if a.Connected != connected || failed {
				continue
			}
			na := social.NewAccount{Username: a.Username}
			if connected {
				na = social.NewAccount{IGUserID: a.ID, Token: a.Token}
			}
			if first {
				first = false
				if _, err := social.Add(e.ctx, e.pool, e.sealer, na, "bench"); err != nil {
					e.t.Fatalf("add %s: %v", a.Username, err)
				}
				continue
			}
			select {
			case work <- na:
			case err := <-errs:
				errs <- err
				failed = true
			}
		}
		close(work)
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			e.t.Fatal(err)
		}
	}
}

// store is what the tables hold: the raw store (every partition), and the normalized and state
// tables, rows and bytes with their indexes and TOAST.
type store struct {
	rawRows, rawBytes, normRows, normBytes int64
}

// normTables are the tables a sync cycle writes besides the raw store.
var normTables = []string{"social_accounts", "social_account_counts", "social_posts", "social_post_content", "social_post_counts",
	"social_media_items", "social_comments", "social_tags", "social_rejects", "status_history", "social_enrichments"}

func measureStore(b *testing.B, e *env) store {
	var s store
	err := e.pool.QueryRow(e.ctx, `SELECT (SELECT count(*) FROM social_raw_pages),
  (SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('social_raw_pages') WHERE isleaf)::bigint`).Scan(&s.rawRows, &s.rawBytes)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range normTables {
		var rows, bytes int64
		if err := e.pool.QueryRow(e.ctx, `SELECT (SELECT count(*) FROM `+t+`), pg_total_relation_size($1::regclass)`, t).Scan(&rows, &bytes); err != nil {
			b.Fatal(err)
		}
		s.normRows += rows
		s.normBytes += bytes
	}
	return s
}

// pickCost times one shard's picks over the whole table, as a sync step makes them: the
// accounts due for a profile read, batch after batch; and the posts waiting for comments (at
// a cycle's start none: the worst case, a read of the whole status range of other shards).
// Each is the median of pickRuns runs: one run of a few ms on a loaded machine is noise. The
// pages each read (shared buffers hit or read, by EXPLAIN ANALYZE of the statements the picks
// ran) do not depend on the load.
func pickCost(b *testing.B, e *env, shards int, now time.Time) (accounts, posts time.Duration, accountPages, postPages int) {
	var shard *status.Shard
	if shards > 1 {
		shard = &status.Shard{Column: "id", Count: shards, Index: 0}
	}
	rec := &recordingDB{Pool: e.pool}
	accounts = median(func() {
		rec.ran = nil
		var after int64
		for {
			ids, err := social.Accounts.Pick(e.ctx, rec, status.PickParams{Statuses: []status.Status{social.ProfilePending, social.Synced, social.SyncRetry},
				After: after, Limit: social.AccountBatch, DueBy: now, Shard: shard})
			if err != nil {
				b.Fatal(err)
			}
			if len(ids) < social.AccountBatch {
				break
			}
			after = ids[len(ids)-1]
		}
	})
	accountPages = rec.pages(b, e)
	if shard != nil {
		shard = &status.Shard{Column: "account_id", Count: shards, Index: 0}
	}
	posts = median(func() {
		rec.ran = nil
		if _, err := social.Posts.Pick(e.ctx, rec, status.PickParams{Statuses: []status.Status{social.CommentsPending, social.CommentsRetry},
			Limit: social.PostBatch, DueBy: now, Shard: shard,
			Parent: &status.ParentPick{Column: "account_id", Machine: social.Accounts, Statuses: []status.Status{social.Synced}}}); err != nil {
			b.Fatal(err)
		}
	})
	return accounts, posts, accountPages, rec.pages(b, e)
}

// recordingDB is the pool, noting the queries run through it.
type recordingDB struct {
	*pgxpool.Pool
	ran []recordedQuery
}

type recordedQuery struct {
	sql  string
	args []any
}

func (r *recordingDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.ran = append(r.ran, recordedQuery{sql, args})
	return r.Pool.Query(ctx, sql, args...)
}

// pages runs the recorded queries again under EXPLAIN (ANALYZE, BUFFERS) and sums the pages
// they read (shared buffers hit or read).
func (r *recordingDB) pages(b *testing.B, e *env) int {
	total := 0
	for _, q := range r.ran {
		var raw []byte
		if err := e.pool.QueryRow(e.ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+q.sql, q.args...).Scan(&raw); err != nil {
			b.Fatal(err)
		}
		var plan []struct {
			Plan struct {
				Hit  int `json:"Shared Hit Blocks"`
				Read int `json:"Shared Read Blocks"`
			}
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			b.Fatalf("%v: %s", err, raw)
		}
		total += plan[0].Plan.Hit + plan[0].Plan.Read
	}
	return total
}

// pickRuns is how many times pickCost runs each pick.
const pickRuns = 5

// median is the median time of pickRuns runs of fn.
func median(fn func()) time.Duration {
	ds := make([]time.Duration, pickRuns)
	for i := range ds {
		start := time.Now()
		fn()
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// processCPU is the CPU time this process (the fake and every shard) has used, user and
// system (0 off Linux).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU is the CPU time the database server has used (Linux, a server on this machine):
// the postmaster's own and its reaped backends' (cutime, cstime), and its live children's.
func postgresCPU(b *testing.B, e *env) time.Duration {
	var backend int
	if err := e.pool.QueryRow(e.ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	// stat reads a process's parent, its own CPU ticks (utime, stime) and its reaped
	// children's (cutime, cstime): the 12th to 15th fields after the command's parenthesis.
	stat := func(pid int) (ppid int, own, children int64, ok bool) {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, 0, 0, false
		}
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(f) < 15 {
			return 0, 0, 0, false
		}
		n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
		ppid, _ = strconv.Atoi(f[1])
		return ppid, n(11) + n(12), n(13) + n(14), true
	}
	postmaster, _, _, ok := stat(backend)
	if !ok {
		return 0
	}
	var total int64
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		switch ppid, own, children, ok := stat(pid); {
		case ok && pid == postmaster:
			total += own + children
		case ok && ppid == postmaster:
			total += own
		}
	}
	return time.Duration(total) * time.Second / 100 // USER_HZ
}

// watchConnections samples the database's connections every 50 ms until the returned
// function is called, which returns the most seen.
func watchConnections(e *env) func() int {
	var mu sync.Mutex
	top := 0
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			var n int
			if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&n); err == nil {
				mu.Lock()
				top = max(top, n-1) // less this query's own
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}

// resetPeakRSS starts the process's peak RSS (VmHWM) again from its current RSS (Linux).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set since the last reset, in bytes (0 off Linux).
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkRepairScan times the repair scan every profiles step of every shard starts with
// (Syncer.Repair) over tables of 10^4 and 10^6 posts whose walks are all of the current
// version: nothing to repair, so its cost should not grow with the tables.
//
//	scripts/with-pg.sh go test -run '^$' -bench BenchmarkRepairScan -benchtime 20x ./internal/social/
func BenchmarkRepairScan(b *testing.B) {
	for _, posts := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("posts=%d", posts), func(b *testing.B) {
			e := &env{t: b, ctx: context.Background(), pool: tunedPool(b)}
			accounts := posts / 10
			for _, q := range []string{
				`INSERT INTO social_accounts (id, access, ig_user_id, token_sealed, token_fingerprint, status, walk_version, listed_at, media_count)
SELECT g, 'connected', g::text, '\x00', 'x', 'synced', $2, now(), 10 FROM generate_series(1, $1::int) g`,
				`INSERT INTO social_posts (account_id, ig_media_id, surface, item_hash, listed_raw_id, listed_raw_at, status, walk_version, comments_hwm_at)
SELECT 1 + g % $1::int, 'm' || g, 'feed', '', 0, now(), 'normalized', $2, now() FROM generate_series(1, $1::int * 10) g`,
			} {
				if _, err := e.pool.Exec(e.ctx, q, accounts, social.WalkVersion); err != nil {
					b.Fatal(err)
				}
			}
			for _, q := range []string{`VACUUM ANALYZE social_accounts`, `VACUUM ANALYZE social_posts`} {
				if _, err := e.pool.Exec(e.ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			s := &social.Syncer{Pool: e.pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Shard: status.Shard{Count: 16, Index: 3}}
			b.ResetTimer()
			for range b.N {
				if rs, err := s.Repair(e.ctx); err != nil || rs.Accounts+rs.Posts+rs.Checked != 0 {
					b.Fatal(rs, err)
				}
			}
		})
	}
}
