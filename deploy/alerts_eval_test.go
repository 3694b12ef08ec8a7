package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/promqltest"

	"github.com/ingest-dev/ingest/internal/metrics"
)

// alertExpr returns the expression of the alert named name, on one line (promqltest reads an
// expression from a single line).
func alertExpr(t *testing.T, name string) string {
	t.Helper()
	groups, _ := monitoring(t)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return strings.Join(strings.Fields(r.Expr), " ")
			}
		}
	}
	t.Fatalf("no alert %s", name)
	return ""
}

// The run alerts are evaluated by Prometheus' own engine over the series a sharded sync and an
// unsharded command leave, three hours in (every 5 minutes a sample): a shard that stopped
// succeeding fires on its own while the other shard keeps succeeding, and a healthy command
// without a shard label stays quiet. Before the shard became a label of its own, `max by
// (command)` took the healthy shard's success for the whole command, and nothing fired.
func TestRunAlertsFirePerShard(t *testing.T) {
	t.Parallel()
	series := `
load 5m
  ingest:schedule_interval_seconds{command="social_sync_run"} 3600x36
  ingest:schedule_interval_seconds{command="extract_habr"} 3600x36
  ingest_last_success_timestamp_seconds{job="ingest",command="social_sync_run",shard="0"} 0+300x36
  ingest_last_success_timestamp_seconds{job="ingest",command="social_sync_run",shard="1"} 0x36
  ingest_last_completion_timestamp_seconds{job="ingest",command="social_sync_run",shard="0"} 0+300x36
  ingest_last_completion_timestamp_seconds{job="ingest",command="social_sync_run",shard="1"} 0+300x36
  ingest_last_completion_timestamp_seconds{job="ingest",command="social_sync_run",shard="2"} 0+300x36
  ingest_run_start_timestamp_seconds{job="ingest",command="social_sync_run",shard="0"} 0+300x36
  ingest_run_start_timestamp_seconds{job="ingest",command="social_sync_run",shard="1"} 0+300x36
  ingest_run_start_timestamp_seconds{job="ingest",command="social_sync_run",shard="2"} 0x36
  ingest_last_success_timestamp_seconds{job="ingest",command="extract_habr"} 0+300x36
  ingest_last_completion_timestamp_seconds{job="ingest",command="extract_habr"} 0+300x36
  ingest_run_start_timestamp_seconds{job="ingest",command="extract_habr"} 0+300x36
`
	// At 3 h: shard 1 last succeeded at 0, 10,800 s ago (over two intervals); shard 2 completes
	// but has never succeeded; no run holds its lock (every start is older than the completion
	// after it); shard 0 and extract_habr are healthy.
	tests := fmt.Sprintf(`%s
eval instant at 3h %s
  {command="social_sync_run", shard="1"} 10800

eval instant at 3h %s
  {command="social_sync_run", shard="2"} 10800

eval instant at 3h %s
`, series, alertExpr(t, "IngestNoRecentSuccess"), alertExpr(t, "IngestNeverSucceeded"), alertExpr(t, "IngestRunLockHeldTooLong"))
	promqltest.RunTest(t, tests, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
}

// A run of one shard that holds its lock past its interval fires for that shard alone.
func TestLockAlertFiresPerShard(t *testing.T) {
	t.Parallel()
	tests := fmt.Sprintf(`
load 5m
  ingest:schedule_interval_seconds{command="social_sync_run"} 3600x36
  ingest_run_start_timestamp_seconds{job="ingest",command="social_sync_run",shard="0"} 0+300x36
  ingest_last_completion_timestamp_seconds{job="ingest",command="social_sync_run",shard="0"} 0+300x36
  ingest_run_start_timestamp_seconds{job="ingest",command="social_sync_run",shard="1"} 3600x36
  ingest_last_completion_timestamp_seconds{job="ingest",command="social_sync_run",shard="1"} 3000x36

eval instant at 3h %s
  {command="social_sync_run", shard="1"} 7200
`, alertExpr(t, "IngestRunLockHeldTooLong"))
	promqltest.RunTest(t, tests, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
}

// The shard label the alerts group by is the one a sharded command's metrics carry.
func TestShardLabelIsWritten(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.Finish(true)
	path := filepath.Join(t.TempDir(), "x.prom")
	if err := m.WriteTextfile(path, "social sync run"+metrics.ShardSuffix(1, 2)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `ingest_last_success_timestamp_seconds{command="social_sync_run",shard="1"}`) {
		t.Errorf("a sharded run's textfile lacks its shard label:\n%s", b)
	}
}
