package bitrix_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// BenchmarkGetTasksSlowPortal is the tasks listing of a tasks get (tasks.task.list by ID chain,
// ID ranges walked at once, every row stored) against a portal holding BITRIX_BENCH_TASKS tasks
// (default 100,000) that answers at a realistic pace (50 ms per request plus 20 ms per method run:
// about a second for a full batch of 50 pages), at the standard plan's limit (2 requests/s,
// bucket 50), 8 requests in flight. The client's bucket starts drained (another job just used
// it), so every request waits its turn and the floor is http_calls / 2 s: the ~43 calls of
// 100,000 tasks would otherwise fit in one burst and leave no floor to compare with. The tasks' children (checklists, comments:
// one command per task) are left out here by registering tasks without them; they are what
// BenchmarkGetTaskComments measures. Metrics as BenchmarkGetUsersSlowPortal's.
func BenchmarkGetTasksSlowPortal(b *testing.B) {
	tasks := envInt(b, "BITRIX_BENCH_TASKS", 100_000)
	std := rest.DefaultRate()
	cat := bitrix.Catalog()
	var ents []*engine.Entity
	for _, name := range []string{bitrix.Users, bitrix.Groups, bitrix.Tasks} {
		ent, _ := cat.Entity(name)
		ents = append(ents, ent)
	}
	reg, err := engine.NewRegistry(ents...)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		b.StopTimer()
		pool := dbtest.Pool(b)
		portal := bitrixfake.New(bitrixfake.Options{Users: 1_000, Groups: 50, Tasks: tasks, Seed: 63, Rate: std.PerSecond, Burst: std.Burst,
			Latency: 50 * time.Millisecond, CommandLatency: 20 * time.Millisecond})
		srv := httptest.NewServer(portal)
		limiter := std.NewLimiter()
		limiter.ReserveN(time.Now(), std.Burst-1)
		src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: limiter, Logger: quietLog()})
		if err != nil {
			b.Fatal(err)
		}
		e := benchEngine(b, engine.Config{Registry: reg, Pool: pool, Source: src, Log: benchLog(), Metrics: metrics.New(), Actor: "bench", Concurrency: 8})
		visible := 0
		for _, ti := range portal.TaskInfos() {
			if !ti.Hidden {
				visible++
			}
		}
		b.StartTimer()
		start := time.Now()
		st, err := e.Get(context.Background(), bitrix.Tasks)
		wall := time.Since(start).Seconds()
		if err != nil {
			b.Fatal(err)
		}
		srv.Close()
		if st.Of(bitrix.Tasks).Rows != visible || !st.Complete {
			b.Fatalf("get read %d tasks, want %d: %+v", st.Of(bitrix.Tasks).Rows, visible, st)
		}
		reportAgainstFloor(b, src.Stats(), std, true, wall)
		minCalls := 1 + 1 + float64((visible-rest.PageSize+2_499)/2_500) + 1
		b.ReportMetric(minCalls, "min_calls")
		b.ReportMetric(minCalls/std.PerSecond, "min_floor_s")
		b.ReportMetric(float64(visible)/wall, "tasks/s")
	}
}

// countingSource counts the requests a get sends, by the method they carry (a batch by its
// commands' method: the engine never mixes methods in one batch).
type countingSource struct {
	*rest.Client
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingSource) count(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
}

func (c *countingSource) Call(ctx context.Context, method string, params any) (*rest.Response, error) {
	c.count(method)
	return c.Client.Call(ctx, method, params)
}

func (c *countingSource) Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error) {
	if len(cmds) > 0 {
		c.count(cmds[0].Method)
	}
	return c.Client.Batch(ctx, cmds, halt)
}

func (c *countingSource) ScanBounds(ctx context.Context, s rest.Scan, after string) (rest.Bounds, error) {
	c.count(s.Method)
	return c.Client.ScanBounds(ctx, s, after)
}

func (c *countingSource) ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error) {
	c.count(s.Method)
	return c.Client.ScanSegments(ctx, s, segs)
}

// BenchmarkGetTaskComments is a whole tasks get, children included, against a portal holding
// BITRIX_BENCH_TASKS tasks (default 10,000), half of them in the new card (comments in the task's
// chat) and half in the old one, BITRIX_BENCH_TASK_COMMENTS comments a task on average (default
// 4), at the realistic pace and limit of BenchmarkGetTasksSlowPortal, 8 requests in flight. It
// reports the HTTP calls by what they read (listing, checklists, old-card comments, chat
// comments), the comments read, calls per comment (the two comment paths' calls over the
// comments), and wall time against the rate-limit floor of all the calls.
func BenchmarkGetTaskComments(b *testing.B) {
	tasks := envInt(b, "BITRIX_BENCH_TASKS", 10_000)
	perTask := envInt(b, "BITRIX_BENCH_TASK_COMMENTS", 4)
	std := rest.DefaultRate()
	for range b.N {
		b.StopTimer()
		pool := dbtest.Pool(b)
		portal := bitrixfake.New(bitrixfake.Options{Users: 1_000, Groups: 50, Tasks: tasks, TaskComments: perTask, Seed: 64,
			Rate: std.PerSecond, Burst: std.Burst, Latency: 50 * time.Millisecond, CommandLatency: 20 * time.Millisecond})
		srv := httptest.NewServer(portal)
		client, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: std.NewLimiter(), Logger: quietLog()})
		if err != nil {
			b.Fatal(err)
		}
		src := &countingSource{Client: client, calls: map[string]int{}}
		e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Log: benchLog(), Metrics: metrics.New(), Actor: "bench", Concurrency: 8})
		b.StartTimer()
		start := time.Now()
		st, err := e.Get(context.Background(), bitrix.Tasks)
		wall := time.Since(start).Seconds()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		srv.Close()
		comments := st.Of(bitrix.TaskComments).Rows
		var chat, old int
		for _, ti := range portal.TaskInfos() {
			switch {
			case ti.Hidden || ti.ChatRefused:
			case ti.Chat:
				chat += ti.Comments
			default:
				old += ti.Comments
			}
		}
		if comments < chat+old {
			b.Fatalf("read %d comments, the portal has %d readable", comments, chat+old)
		}
		reportAgainstFloor(b, client.Stats(), std, false, wall)
		commentCalls := src.calls["task.commentitem.getlist"] + src.calls["im.dialog.messages.get"]
		b.ReportMetric(float64(src.calls["tasks.task.list"]), "listing_calls")
		b.ReportMetric(float64(src.calls["task.checklistitem.getlist"]), "checklist_calls")
		b.ReportMetric(float64(src.calls["task.commentitem.getlist"]), "old_card_calls")
		b.ReportMetric(float64(src.calls["im.dialog.messages.get"]), "chat_calls")
		b.ReportMetric(float64(old), "old_card_comments")
		b.ReportMetric(float64(chat), "chat_comments")
		b.ReportMetric(float64(commentCalls)/float64(comments), "calls/comment")
		b.StartTimer()
	}
}
