package bitrix_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// peerGetAll is the strategy of fast_bitrix24's get_all (1.8.x), written here because the
// library cannot be installed on the project's machine: one call with counting on to learn the
// total, then every remaining `start` page as one command of a batch, 50 to a batch, all the
// batches sent at once under the client's own leaky bucket (2 requests/s, 50 in the bucket,
// starting empty). It stores nothing and retries nothing: an error answer (a 503 included)
// fails the run, as it fails fast_bitrix24's get_all once its retries are spent. It returns the
// rows read and the requests sent.
// rowsKey names the object the rows are under in a result ("items" for crm.item.list), "" when
// the result is the list itself.
func peerGetAll(ctx context.Context, webhook, method, rowsKey string, params map[string]any) (rows, requests int, err error) {
	count := func(result json.RawMessage) (int, error) {
		if rowsKey != "" {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(result, &obj); err != nil {
				return 0, err
			}
			result = obj[rowsKey]
		}
		var list []json.RawMessage
		err := json.Unmarshal(result, &list)
		return len(list), err
	}
	bucket := rate.NewLimiter(2, 50)
	var sent atomic.Int64
	call := func(ctx context.Context, path string, body []byte) (json.RawMessage, error) {
		if err := bucket.Wait(ctx); err != nil {
			return nil, err
		}
		sent.Add(1)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, webhook+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("peer: %s answered %d: %.200s", path, resp.StatusCode, raw)
		}
		return raw, nil
	}
	first, _ := json.Marshal(withStart(params, 0))
	raw, err := call(ctx, method+".json", first)
	if err != nil {
		return 0, int(sent.Load()), err
	}
	var head struct {
		Result json.RawMessage `json:"result"`
		Total  int             `json:"total"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return 0, int(sent.Load()), fmt.Errorf("peer: first page: %w", err)
	}
	var mu sync.Mutex
	if rows, err = count(head.Result); err != nil {
		return 0, int(sent.Load()), fmt.Errorf("peer: first page: %w", err)
	}
	var starts []int
	for s := rest.PageSize; s < head.Total; s += rest.PageSize {
		starts = append(starts, s)
	}
	g, gctx := errgroup.WithContext(ctx)
	for len(starts) > 0 {
		chunk := starts[:min(len(starts), rest.MaxBatch)]
		starts = starts[len(chunk):]
		cmd := map[string]string{}
		for _, s := range chunk {
			q, err := rest.BuildQuery(withStart(params, s))
			if err != nil {
				return 0, 0, err
			}
			cmd[fmt.Sprintf("s%d", s)] = method + "?" + q
		}
		body, _ := json.Marshal(map[string]any{"halt": 0, "cmd": cmd})
		g.Go(func() error {
			raw, err := call(gctx, "batch.json", body)
			if err != nil {
				return err
			}
			var br struct {
				Result struct {
					Result map[string]json.RawMessage `json:"result"`
				} `json:"result"`
			}
			if err := json.Unmarshal(raw, &br); err != nil {
				return fmt.Errorf("peer: batch: %w", err)
			}
			n := 0
			for key, page := range br.Result.Result {
				k, err := count(page)
				if err != nil {
					return fmt.Errorf("peer: batch page %s: %w", key, err)
				}
				n += k
			}
			mu.Lock()
			rows += n
			mu.Unlock()
			return nil
		})
	}
	err = g.Wait()
	return rows, int(sent.Load()), err
}

func withStart(params map[string]any, start int) map[string]any {
	out := map[string]any{"start": start}
	for k, v := range params {
		out[k] = v
	}
	return out
}

// BenchmarkGetSideBySide runs, in one process and one after the other on fresh portals of the
// same size (2 requests/s, bucket 50, both buckets starting empty; 50 ms per request plus 20 ms
// per method run, about a second for a full batch), ingest's get (every row stored in Postgres)
// and peerGetAll (nothing stored), for 20,000 users and 100,000 deals, and 200,000 users when
// BITRIX_BENCH_PEER_BIG is set (slow: run it once). Per pair it reports both wall times, their
// ratio, ingest's requests and 503s against min_calls (minGetCalls: what the peer sends) and,
// when those are more than the bucket holds, min_floor_s: when the last of them can leave at 2
// requests/s, plus the answer time of a full batch (1.05 s here).
func BenchmarkGetSideBySide(b *testing.B) {
	std := rest.DefaultRate()
	type work struct {
		name, entity, method, rowsKey string
		opts                          bitrixfake.Options
		n                             int
		params                        map[string]any
	}
	works := []work{
		{"users=20000", bitrix.Users, "user.get", "", bitrixfake.Options{Users: 20_000}, 20_000,
			map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}, "sort": "ID", "order": "ASC"}},
		{"deals=100000", bitrix.Deals, "crm.item.list", "items", bitrixfake.Options{Users: 500, Companies: 2_000, Contacts: 4_000, Deals: 100_000}, 100_000,
			map[string]any{"entityTypeId": 2, "select": []string{"*"}, "useOriginalUfNames": "Y", "order": map[string]any{"id": "ASC"}}},
	}
	if envInt(b, "BITRIX_BENCH_PEER_BIG", 1) > 1 {
		works = append(works, work{"users=200000", bitrix.Users, "user.get", "", bitrixfake.Options{Users: 200_000}, 200_000,
			map[string]any{"ADMIN_MODE": true, "select": []string{"*", "UF_*"}, "sort": "ID", "order": "ASC"}})
	}
	portal := func(o bitrixfake.Options) (*bitrixfake.Portal, *httptest.Server) {
		o.Seed, o.Rate, o.Burst = 61, std.PerSecond, std.Burst
		o.Latency, o.CommandLatency = 50*time.Millisecond, 20*time.Millisecond
		p := bitrixfake.New(o)
		return p, httptest.NewServer(p)
	}
	for _, w := range works {
		b.Run(w.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				pool := dbtest.Pool(b)
				p, srv := portal(w.opts)
				src, err := rest.New(srv.URL+p.WebhookPath(), rest.Options{Limiter: std.NewLimiter(), Logger: quietLog()})
				if err != nil {
					b.Fatal(err)
				}
				e := benchEngine(b, engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: src, Log: benchLog(), Metrics: metrics.New(), Actor: "bench", Concurrency: 8})
				b.StartTimer()
				start := time.Now()
				st, err := e.Get(context.Background(), w.entity)
				ours := time.Since(start).Seconds()
				b.StopTimer()
				srv.Close()
				if err != nil {
					b.Fatal(err)
				}
				if st.Of(w.entity).Rows != w.n || !st.Complete {
					b.Fatalf("get read %d, want %d: %+v", st.Of(w.entity).Rows, w.n, st)
				}

				p, srv = portal(w.opts)
				start = time.Now()
				rows, peerCalls, peerErr := peerGetAll(context.Background(), srv.URL+p.WebhookPath(), w.method, w.rowsKey, w.params)
				peer := time.Since(start).Seconds()
				srv.Close()
				if peerErr == nil && rows != w.n {
					peerErr = fmt.Errorf("peer read %d rows, want %d", rows, w.n)
				}
				if peerErr != nil {
					b.Logf("peer failed after %.2f s: %v", peer, peerErr)
				}

				minCalls := minGetCalls(w.n)
				minFloor := 0.0
				if queued := minCalls - float64(std.Burst-1); queued > 0 {
					fullBatch := 50*time.Millisecond + rest.MaxBatch*20*time.Millisecond
					minFloor = queued/std.PerSecond + fullBatch.Seconds()
				}
				b.ReportMetric(ours, "ingest_s")
				b.ReportMetric(float64(src.Stats().Requests), "ingest_calls")
				b.ReportMetric(float64(src.Stats().QueryLimit), "ingest_503s")
				b.ReportMetric(peer, "peer_s")
				b.ReportMetric(float64(peerCalls), "peer_calls")
				b.ReportMetric(ours/peer, "x_peer")
				b.ReportMetric(minCalls, "min_calls")
				if minFloor > 0 {
					b.ReportMetric(minFloor, "min_floor_s")
					b.ReportMetric(ours/minFloor, "x_min_floor")
				}
				b.StartTimer()
			}
		})
	}
}
