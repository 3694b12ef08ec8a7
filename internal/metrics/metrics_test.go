package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
