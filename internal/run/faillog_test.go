package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/run"
)

// TestFailedRunLogsItsErrorFirst: the line of a failed run starts with its error, however many
// counters follow it (a migration's line ran to 2,000 characters with the error last).
func TestFailedRunLogsItsErrorFirst(t *testing.T) {
	t.Parallel()
	_, o := setup(t)
	var text, js bytes.Buffer
	for _, c := range []struct {
		buf *bytes.Buffer
		h   slog.Handler
	}{{&text, slog.NewTextHandler(&text, nil)}, {&js, slog.NewJSONHandler(&js, nil)}} {
		o.Log = slog.New(c.h)
		err := run.Exec(context.Background(), o, func(ctx context.Context, r *run.Run) error {
			for _, e := range []string{"users", "groups", "chats", "feed", "tasks", "deals"} {
				r.Metrics.Processed.WithLabelValues(e, "done").Add(3)
			}
			return errors.New("verify deals: 3 records differ")
		})
		if err == nil {
			t.Fatal("the run did not fail")
		}
	}
	line := lastLine(text.String())
	if !strings.HasPrefix(line[strings.Index(line, "level="):], `level=ERROR msg="run failed: verify deals: 3 records differ" `) {
		t.Errorf("text line does not start with the error:\n%s", line)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lastLine(js.String())), &rec); err != nil || rec["msg"] != "run failed: verify deals: 3 records differ" {
		t.Errorf("JSON line: %v %v", err, rec)
	}
	if i, j := strings.Index(line, "records_processed_total{entity=chats"), strings.Index(line, "records_processed_total{entity=users"); i < 0 || j < i {
		t.Errorf("counters not in sorted order:\n%s", line)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
