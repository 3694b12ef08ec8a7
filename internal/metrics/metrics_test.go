package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/metrics"
)

func TestSnapshotAndTextfile(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.RecordsExtracted.WithLabelValues("users").Add(3)
	m.ImportOK.WithLabelValues("users").Inc()
	m.Processed.WithLabelValues("habr_publications", "extract_failed").Add(2)
	m.Phase("users", "get")()
	m.Finish(true)

	snap := m.Snapshot()
	if snap["records_extracted_total{entity=users}"] != 3 || snap["records_processed_total{entity=habr_publications,outcome=extract_failed}"] != 2 {
		t.Errorf("snapshot = %v", snap)
	}
	if _, ok := snap["duration_ms{entity=users,phase=get}"]; !ok {
		t.Errorf("snapshot lacks the phase duration: %v", snap)
	}
	for k := range snap {
		if strings.Contains(k, "timestamp") {
			t.Errorf("snapshot holds a timestamp: %s", k)
		}
	}

	path := filepath.Join(t.TempDir(), "ingest.prom")
	if err := m.WriteTextfile(path, "bitrix users get"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`records_import_ok_total{command="bitrix_users_get",entity="users"} 1`,
		`ingest_last_success_timestamp_seconds{command="bitrix_users_get"}`, `ingest_last_completion_timestamp_seconds{command="bitrix_users_get"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("textfile lacks %q:\n%s", want, b)
		}
	}
}

func TestPushAddsToCommandGroup(t *testing.T) {
	t.Parallel()
	var method, path, body string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		method, path, body = r.Method, r.URL.Path, string(b)
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()

	m := metrics.New()
	m.ImportErr.WithLabelValues("groups").Inc()
	m.Finish(false)
	if err := m.Push(context.Background(), gw.URL, "bitrix groups set"); err != nil {
		t.Fatal(err)
	}
	// POST adds to the group; a failed run must not carry (and so not reset) the success stamp.
	// The grouping value has no space: a Pushgateway would read "bitrix+groups+set".
	if method != http.MethodPost || path != "/metrics/job/ingest/command/bitrix_groups_set" {
		t.Errorf("push = %s %s, want POST /metrics/job/ingest/command/bitrix_groups_set", method, path)
	}
	if strings.Contains(body, "ingest_last_success_timestamp_seconds") || !strings.Contains(body, "records_import_err_total") {
		t.Errorf("pushed body wrong: %q", body)
	}
}

func TestKeepLastSuccess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ingest.prom")
	if last, err := metrics.ReadLastSuccess(path); err != nil || !last.IsZero() {
		t.Errorf("no file: %v %v, want zero", last, err)
	}
	ok := metrics.New()
	ok.Finish(true)
	if err := ok.WriteTextfile(path, "extract habr"); err != nil {
		t.Fatal(err)
	}
	first, err := metrics.ReadLastSuccess(path)
	if err != nil || first.IsZero() {
		t.Fatalf("after a success: %v %v", first, err)
	}
	failed := metrics.New()
	failed.Finish(false)
	failed.KeepLastSuccess(first)
	if err := failed.WriteTextfile(path, "extract habr"); err != nil {
		t.Fatal(err)
	}
	if again, err := metrics.ReadLastSuccess(path); err != nil || !again.Equal(first) {
		t.Errorf("after a failed run: %v %v, want %v", again, err, first)
	}
	never := metrics.New()
	never.Finish(false)
	never.KeepLastSuccess(time.Time{})
	if err := never.WriteTextfile(path, "extract habr"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "ingest_last_success_timestamp_seconds") {
		t.Errorf("a command that never succeeded has a success time:\n%s", b)
	}
}

// TestStartIsPublishedAtOnce: a run's start reaches the textfile and the Pushgateway when the
// run starts, without erasing what the last run left (the lock-held-too-long alert compares
// them).
func TestStartIsPublishedAtOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ingest.prom")
	last := metrics.New()
	last.Finish(true)
	if err := last.WriteTextfile(path, "extract habr"); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, r.Method+" "+r.URL.Path+"\n"+string(b))
	}))
	defer gw.Close()

	m := metrics.New()
	if err := m.Start(context.Background(), gw.URL, path, "extract habr"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`ingest_run_start_timestamp_seconds{command="extract_habr"}`,
		`ingest_last_success_timestamp_seconds{command="extract_habr"}`, `ingest_last_completion_timestamp_seconds{command="extract_habr"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("textfile after start lacks %s:\n%s", want, b)
		}
	}
	if len(bodies) != 1 || !strings.HasPrefix(bodies[0], "POST /metrics/job/ingest/command/extract_habr\n") ||
		!strings.Contains(bodies[0], "ingest_run_start_timestamp_seconds") || strings.Contains(bodies[0], "ingest_last_completion") {
		t.Errorf("start push = %q, want a POST of the start alone", bodies)
	}
}

// A sharded command keeps its command label whatever the shard count: the shard is a label
// (and grouping key) of its own, and a run deletes the groups of shards at or above its count.
func TestShardIsALabelAndStaleShardsAreDeleted(t *testing.T) {
	t.Parallel()
	command := "social sync run" + metrics.ShardSuffix(1, 2)
	if got := metrics.CommandLabel(command); got != "social_sync_run" {
		t.Errorf("command label %q, want social_sync_run", got)
	}
	if c, i, n := metrics.SplitShard(command); c != "social sync run" || i != 1 || n != 2 {
		t.Errorf("split: %q %d %d", c, i, n)
	}
	var mu sync.Mutex
	var requests []string
	groups := `{"status":"success","data":[
 {"labels":{"job":"ingest","command":"social_sync_run","shard":"0"}},
 {"labels":{"job":"ingest","command":"social_sync_run","shard":"1"}},
 {"labels":{"job":"ingest","command":"social_sync_run","shard":"2"}},
 {"labels":{"job":"ingest","command":"social_sync_run","shard":"3"}},
 {"labels":{"job":"ingest","command":"social_sync_comments","shard":"3"}},
 {"labels":{"job":"ingest","command":"extract_habr"}}]}`
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+groupPath(r.URL.Path))
		mu.Unlock()
		switch {
		case r.URL.Path == "/api/v1/metrics":
			_, _ = io.WriteString(w, groups)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusAccepted) // as the Pushgateway answers
		}
	}))
	defer gw.Close()
	m := metrics.New()
	m.Finish(true)
	if err := m.Push(context.Background(), gw.URL, command); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST /metrics/job/ingest/command/social_sync_run/shard/1", "GET /api/v1/metrics",
		"DELETE /metrics/job/ingest/command/social_sync_run/shard/2", "DELETE /metrics/job/ingest/command/social_sync_run/shard/3"}
	if strings.Join(requests, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(requests, "\n"), strings.Join(want, "\n"))
	}
	path := filepath.Join(t.TempDir(), "ingest.prom")
	if err := m.WriteTextfile(path, command); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), `ingest_last_success_timestamp_seconds{command="social_sync_run",shard="1"}`) {
		t.Errorf("textfile:\n%s", b)
	}
}

// A METRICS_TEXTFILE directory gives each command a file of its own, named so that a shard's
// run name ("social sync run shard 0/4") cannot leave the directory.
func TestTextfileFor(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ path, command, want string }{
		{"", "extract habr", ""},
		{dir + "/x.prom", "extract habr", dir + "/x.prom"},
		{dir, "extract habr", dir + "/ingest_extract_habr.prom"},
		{"/nonexistent/dir/", "social sync run shard 0/4", "/nonexistent/dir/ingest_social_sync_run_shard_0_4.prom"},
	} {
		if got := metrics.TextfileFor(tt.path, tt.command); got != tt.want {
			t.Errorf("TextfileFor(%q, %q) = %q, want %q", tt.path, tt.command, got, tt.want)
		}
	}
}

// groupPath writes a Pushgateway group path with its grouping labels in name order:
// client_golang writes them in map order, which the Pushgateway ignores.
func groupPath(path string) string {
	const prefix = "/metrics/job/ingest/"
	if !strings.HasPrefix(path, prefix) {
		return path
	}
	parts := strings.Split(strings.TrimPrefix(path, prefix), "/")
	if len(parts)%2 != 0 {
		return path
	}
	pairs := make([]string, 0, len(parts)/2)
	for i := 0; i < len(parts); i += 2 {
		pairs = append(pairs, parts[i]+"/"+parts[i+1])
	}
	sort.Strings(pairs)
	return prefix + strings.Join(pairs, "/")
}
