package main

import (
	"fmt"
	"os"
	"os/exec"
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

// TestUnreachableDatabaseRecordsCompletion: a run that cannot reach the database at its start
// still records its completion in its textfile (METRICS_TEXTFILE a directory here: the file is
// the command's own) and keeps the last success an earlier run wrote, so the alerts see a
// failing job rather than a silent one.
func TestUnreachableDatabaseRecordsCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ingest_extract_habr.prom")
	earlier := "# TYPE ingest_last_success_timestamp_seconds gauge\ningest_last_success_timestamp_seconds{command=\"extract_habr\"} 1.7e+09\n"
	if err := os.WriteFile(path, []byte(earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"extract", "habr"}, {"status"}} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "DATABASE_URL=postgres://ingest:pw@127.0.0.1:1/x?connect_timeout=5",
			"METRICS_TEXTFILE="+dir+"/", "LOG_FORMAT=json")
		if err := cmd.Run(); cmd.ProcessState.ExitCode() != exitFailed {
			t.Fatalf("ingest %v on an unreachable database: %v, want exit %d", args, err, exitFailed)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`ingest_last_completion_timestamp_seconds{command="extract_habr"}`,
		`ingest_last_success_timestamp_seconds{command="extract_habr"} 1.7e+09`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("textfile lacks %s:\n%s", want, raw)
		}
	}
	// status is no run: it writes no textfile.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("textfile directory holds %d files, want extract habr's only", len(entries))
	}
}
