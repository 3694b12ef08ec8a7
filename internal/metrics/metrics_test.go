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
	if err := m.WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`records_import_ok_total{entity="users"} 1`, "ingest_last_success_timestamp_seconds", "ingest_last_completion_timestamp_seconds"} {
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
	if method != http.MethodPost || !strings.HasPrefix(path, "/metrics/job/ingest/command") {
		t.Errorf("push = %s %s, want POST /metrics/job/ingest/command/...", method, path)
	}
	if strings.Contains(body, "ingest_last_success_timestamp_seconds") || !strings.Contains(body, "records_import_err_total") {
		t.Errorf("pushed body wrong: %q", body)
	}
}
