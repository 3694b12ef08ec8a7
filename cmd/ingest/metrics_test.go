package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunMetricsTextfile: a command's textfile names its command on every series and holds
// the pipeline's records by status, which the stuck-records alerts read.
func TestRunMetricsTextfile(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	b.registerFew(t, 3)
	path := filepath.Join(t.TempDir(), "ingest_discover_habr.prom")
	cmd, _, stderr := b.command("discover", "habr")
	cmd.Env = append(cmd.Env, "METRICS_TEXTFILE="+path)
	if err := cmd.Run(); err != nil {
		t.Fatalf("discover: %v\n%s", err, stderr)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pending := b.scalar(t, "SELECT count(*) FROM habr_publications WHERE status = 'extract_pending'")
	// Habr records have no scope: an empty label, which Prometheus stores as no label.
	want := fmt.Sprintf(`ingest_records{command="discover_habr",scope="",source="habr",status="extract_pending"} %d`, pending)
	if !strings.Contains(string(raw), want) {
		t.Errorf("textfile lacks %s:\n%s", want, raw)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.HasPrefix(line, "#") && !strings.Contains(line, `command="discover_habr"`) {
			t.Errorf("series without its command: %s", line)
		}
	}
}
