package social_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/social/graph"
	"github.com/ingest-dev/ingest/internal/status"
)

// BenchmarkPick measures the picks the social commands make (the due accounts of one shard; the
// posts of synced accounts waiting for their comments, in one shard) over 10^3 and 10^6
// records; the figures go to docs/benchmarks.md.
//
//	go test -run '^$' -bench BenchmarkPick -benchtime 2000x ./internal/social/
func BenchmarkPick(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			e := &env{t: b, ctx: context.Background(), pool: tunedPool(b)}
			ctx := e.ctx
			// One connected viewer; n discovery accounts, one in ten synced (ids 11, 21, ...: their
			// posts wait for comments; odd, so shard 1 of 4 holds half of them and shard 0 of 2
			// none), the others due for a profile; n posts spread over the synced ones.
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO social_accounts (id, access, ig_user_id, token_sealed, token_fingerprint, status) VALUES (1, 'connected', '1', '\x00', 'x', $1)`,
					[]any{string(social.Synced)}},
				{`INSERT INTO social_accounts (id, access, username, via_account_id, status)
SELECT g, 'discovery', 'u' || g, 1, CASE WHEN g % 10 = 1 THEN $1 ELSE $2 END FROM generate_series(2, $3::int + 1) g`,
					[]any{string(social.Synced), string(social.ProfilePending), n}},
				{`SELECT setval('social_accounts_id_seq', $1::int + 2)`, []any{n}},
				{`INSERT INTO social_posts (account_id, ig_media_id, surface, item_hash, listed_raw_id, listed_raw_at, status)
SELECT 11 + 10 * (g % ($1::int / 10)), 'm' || g, 'feed', '', 0, now(), $2 FROM generate_series(1, $1::int) g`,
					[]any{n, string(social.CommentsPending)}},
				{`VACUUM ANALYZE social_accounts`, nil},
				{`VACUUM ANALYZE social_posts`, nil},
			} {
				if _, err := e.pool.Exec(ctx, q.sql, q.args...); err != nil {
					b.Fatalf("%v: %s", err, q.sql)
				}
			}
			shard := &status.Shard{Count: 4, Index: 1}
			now := time.Now()
			b.Run("accounts", func(b *testing.B) {
				var after int64
				for i := 0; i < b.N; i++ {
					ids, err := social.Accounts.Pick(ctx, e.pool, status.PickParams{Statuses: []status.Status{social.ProfilePending, social.Synced, social.SyncRetry},
						After: after, Limit: social.AccountBatch, DueBy: now, Shard: &status.Shard{Column: "id", Count: shard.Count, Index: shard.Index}})
					if err != nil || len(ids) == 0 {
						after = 0
						continue
					}
					after = ids[len(ids)-1]
				}
			})
			parent := &status.ParentPick{Column: "account_id", Machine: social.Accounts, Statuses: []status.Status{social.Synced}}
			b.Run("posts", func(b *testing.B) {
				var after int64
				for i := 0; i < b.N; i++ {
					ids, err := social.Posts.Pick(ctx, e.pool, status.PickParams{Statuses: []status.Status{social.CommentsPending, social.CommentsRetry},
						After: after, Limit: social.PostBatch, DueBy: now, Parent: parent,
						Shard: &status.Shard{Column: "account_id", Count: shard.Count, Index: shard.Index}})
					if err != nil {
						b.Fatal(err)
					}
					if len(ids) < social.PostBatch {
						after = 0
						continue
					}
					after = ids[len(ids)-1]
				}
			})
			// The worst case: a shard with nothing left among the records of other shards reads the
			// whole status range once (each run's last, empty pick).
			b.Run("posts-none-in-shard", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					ids, err := social.Posts.Pick(ctx, e.pool, status.PickParams{Statuses: []status.Status{social.CommentsPending, social.CommentsRetry},
						Limit: social.PostBatch, DueBy: now, Parent: parent, Shard: &status.Shard{Column: "account_id", Count: 2, Index: 0}})
					if err != nil || len(ids) != 0 {
						b.Fatal(ids, err)
					}
				}
			})
			// The same once the shard count's index is made (by the count's first comments or
			// normalize step: here a normalize of shard 0 of 2, which has nothing to normalize).
			s := &social.Syncer{Pool: e.pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Shard: status.Shard{Count: 2, Index: 0}}
			if _, err := s.Normalize(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := e.pool.Exec(ctx, `ANALYZE social_posts`); err != nil {
				b.Fatal(err)
			}
			b.Run("posts-none-in-shard-indexed", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					ids, err := social.Posts.Pick(ctx, e.pool, status.PickParams{Statuses: []status.Status{social.CommentsPending, social.CommentsRetry},
						Limit: social.PostBatch, DueBy: now, Parent: parent, Shard: &status.Shard{Column: "account_id", Count: 2, Index: 0}})
					if err != nil || len(ids) != 0 {
						b.Fatal(ids, err)
					}
				}
			})
		})
	}
}

// BenchmarkFullSync syncs one connected account of 1,000 posts and 20,000 comments and replies
// from the fake Graph API answering in SOCIAL_BENCH_LATENCY (default 50 ms) per call, and the
// same account the way common extractors read it (25 media a page, one call per carousel child,
// comment pages without replies inline and one call per reply thread), reporting calls and
// wall time.
//
//	SOCIAL_BENCH_NAIVE=1 go test -run '^$' -bench BenchmarkFullSync -benchtime 1x -timeout 30m ./internal/social/
func BenchmarkFullSync(b *testing.B) {
	latency := 50 * time.Millisecond
	if v := os.Getenv("SOCIAL_BENCH_LATENCY"); v != "" {
		var err error
		if latency, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	spec := graphfake.AccountSpec{Username: "big", Connected: true, Posts: 1000, Comments: 20_000}
	b.Run("ingest", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e := newEnv(b, graphfake.Options{Seed: 61, NoFixtureAccounts: true, Latency: latency, Accounts: []graphfake.AccountSpec{spec}})
			e.addAll()
			s := e.syncer(0, 0)
			start := time.Now()
			e.syncAll(s)
			took := time.Since(start)
			st := e.fake.Stats()
			b.ReportMetric(float64(st.Requests), "calls")
			b.ReportMetric(took.Seconds(), "wall-s")
			b.ReportMetric(float64(e.count(`SELECT count(*) FROM social_comments`)), "comments")
			b.ReportMetric(float64(e.count(`SELECT count(*) FROM social_posts WHERE surface = 'feed'`)), "posts")
			b.ReportMetric(float64(st.ByEndpoint["comments"]), "comment-pages")
			b.ReportMetric(float64(st.ByEndpoint["replies"]), "reply-pages")
		}
	})
	b.Run("naive", func(b *testing.B) {
		if os.Getenv("SOCIAL_BENCH_NAIVE") == "" {
			b.Skip("about 11,000 calls, 10 minutes at 50 ms: set SOCIAL_BENCH_NAIVE=1 to run it")
		}
		for i := 0; i < b.N; i++ {
			fake := graphfake.New(graphfake.Options{Seed: 61, NoFixtureAccounts: true, Latency: latency, Accounts: []graphfake.AccountSpec{spec}})
			srv := httptest.NewServer(fake)
			start := time.Now()
			comments := naiveSync(b, srv.URL+"/v23.0", fake.Token("big"), fake.UserID("big"))
			took := time.Since(start)
			srv.Close()
			b.ReportMetric(float64(fake.Stats().Requests), "calls")
			b.ReportMetric(took.Seconds(), "wall-s")
			b.ReportMetric(float64(comments), "comments")
		}
	})
}

// naiveSync reads an account the way common extractors do; it returns the comments read.
func naiveSync(b *testing.B, base, token, userID string) int {
	g, err := graph.New(graph.Options{BaseURL: base, UserAgent: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	get := func(path string, q url.Values) *graph.Edge {
		resp, err := g.Get(ctx, graph.Request{Endpoint: "naive", Path: path, Params: q, Token: token})
		if err != nil {
			b.Fatal(err)
		}
		e, err := graph.EdgeAt(resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	walk := func(path string, q url.Values, each func(m map[string]any)) {
		after := ""
		for {
			if after != "" {
				q.Set("after", after)
			}
			e := get(path, q)
			for _, raw := range e.Data {
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					b.Fatal(err)
				}
				each(m)
			}
			next, more := graph.EndWithoutNext.Next(e)
			if !more {
				return
			}
			after = next
		}
	}
	comments := 0
	walk(userID+"/media", url.Values{"fields": {"id,caption,comments_count,like_count,media_type,media_url,permalink,timestamp"}, "limit": {"25"}}, func(m map[string]any) {
		id := m["id"].(string)
		if m["media_type"] == "CAROUSEL_ALBUM" {
			walk(id+"/children", url.Values{"fields": {"id"}}, func(c map[string]any) {
				get(c["id"].(string), url.Values{"fields": {"id,media_type,media_url,timestamp"}}) // one call per child
			})
		}
		if n, _ := m["comments_count"].(float64); n > 0 {
			walk(id+"/comments", url.Values{"fields": {"id,text,timestamp,username,like_count"}, "limit": {"50"}}, func(c map[string]any) {
				comments++
				walk(c["id"].(string)+"/replies", url.Values{"fields": {"id,text,timestamp,username"}, "limit": {"50"}}, func(map[string]any) { comments++ })
			})
		}
	})
	return comments
}

// BenchmarkMemoryFlat runs the comment walk and normalize over backlogs of 1,000 and 10,000
// posts and reports the peak live heap above what the fake's data held before the run: it must
// not grow with the backlog.
//
//	go test -run '^$' -bench BenchmarkMemoryFlat -benchtime 1x ./internal/social/
func BenchmarkMemoryFlat(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run("posts="+strconv.Itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				e := newEnv(b, graphfake.Options{Seed: 62, NoFixtureAccounts: true,
					Accounts: []graphfake.AccountSpec{{Username: "big", Connected: true, Posts: n, Comments: 5 * n}}})
				e.addAll()
				s := e.syncer(0, 0)
				for _, fn := range []func(context.Context) (social.Stats, error){s.SyncProfiles, s.SyncPosts} {
					if _, err := fn(e.ctx); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				base := liveHeap()
				peak := watch()
				start := time.Now()
				for _, fn := range []func(context.Context) (social.Stats, error){s.SyncComments, s.Normalize} {
					if _, err := fn(e.ctx); err != nil {
						b.Fatal(err)
					}
				}
				took := time.Since(start)
				top := peak()
				b.ReportMetric(float64(top-min(top, base))/(1<<20), "peak-live-above-base-MiB")
				b.ReportMetric(float64(base)/(1<<20), "base-live-MiB")
				b.ReportMetric(float64(took.Milliseconds())/float64(n), "ms/post")
			}
		})
	}
}

// liveHeap is the heap the last GC found live: what the code holds, not the garbage it has not
// collected yet (whose amount follows GOGC and the live heap, here mostly the fake's data).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// watch samples the live heap every 10 ms until the returned function is called, which returns
// the highest seen.
func watch() func() uint64 {
	var mu sync.Mutex
	var top uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			live := liveHeap()
			mu.Lock()
			top = max(top, live)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}
