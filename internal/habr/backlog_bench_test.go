package habr_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/habrfake"
	"github.com/ingest-dev/ingest/internal/fetch"
	"github.com/ingest-dev/ingest/internal/habr"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// BenchmarkExtractBacklog runs a whole extraction (pause 0, the local fake over HTTP, a real
// Postgres) over backlogs of different sizes and reports time per article and peak memory:
// the memory must not grow with the backlog. Run it once per size:
//
//	go test -run '^$' -bench BenchmarkExtractBacklog -benchtime 1x ./internal/habr/
func BenchmarkExtractBacklog(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("backlog=%d", n), func(b *testing.B) {
			// The fake runs in a process of its own: its catalogue of n articles must not count as
			// the extraction's memory.
			bundle := newPipelineBundle(b, startFakeProcess(b, n))
			// The feed of a huge backlog is bigger than a page may be: read it with a larger cap.
			big, err := fetch.New(fetch.Config{BaseURL: bundle.base, UserAgent: "ingest-bench", MaxBodyBytes: 1 << 30, Timeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			d := &habr.Discoverer{Pool: bundle.pool, Fetcher: big, Log: bundle.log, Metrics: metrics.New(),
				Feeds: []string{fmt.Sprintf("%s?limit=%d", habrfake.FeedArticles, n+200)}}
			st, err := d.Run(bundle.ctx)
			if err != nil || st.New < n*4/5 {
				b.Fatalf("discovered %+v (%v), want about %d", st, err, n)
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if _, err := bundle.pool.Exec(bundle.ctx, "UPDATE habr_publications SET status = 'extract_pending'; DELETE FROM habr_markdown; DELETE FROM habr_html_cache"); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				baseline := ms.HeapInuse + ms.StackInuse
				peak := watchHeap()
				b.StartTimer()
				start := time.Now()
				es, err := bundle.extraction().Run(bundle.ctx)
				took := time.Since(start)
				b.StopTimer()
				heap := peak()
				if err != nil || es.Extracted != st.New {
					b.Fatalf("extraction %+v (%v), want %d extracted", es, err, st.New)
				}
				b.ReportMetric(float64(took.Milliseconds())/float64(es.Extracted), "ms/article")
				b.ReportMetric(float64(baseline)/(1<<20), "heap-before-MiB")
				b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(vmHWM())/(1<<10), "peak-rss-MiB")
				b.ReportMetric(float64(es.Extracted), "articles")
			}
		})
	}
}

// startFakeProcess builds and starts cmd/fakes with n extra articles and returns its Habr URL.
func startFakeProcess(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "fakes")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/fakes").CombinedOutput(); err != nil {
		b.Fatalf("build fakes: %v\n%s", err, out)
	}
	env := filepath.Join(dir, "fakes.env")
	cmd := exec.Command(bin, "--env-file", env, "--habr-extra-articles", strconv.Itoa(n))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for range 300 {
		if raw, err := os.ReadFile(env); err == nil {
			for _, line := range strings.Split(string(raw), "\n") {
				if v, ok := strings.CutPrefix(line, "HABR_BASE_URL="); ok {
					return v
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("the fakes did not start")
	return ""
}

// watchHeap samples the live heap until the returned function is called, which returns the peak.
func watchHeap() func() uint64 {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse+ms.StackInuse)
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
		wg.Wait()
		return peak
	}
}

// vmHWM is the process's peak resident set size in KiB (Linux), 0 elsewhere. It covers the
// whole test process, the fake Habr server included.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
