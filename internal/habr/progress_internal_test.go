package habr

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The ETA counts the pauses still to come: after the first batch of a 30-record backlog, 20
// records at 0.2 s each and the two pauses before the two batches left.
func TestProgressETACountsThePauses(t *testing.T) {
	var buf bytes.Buffer
	e := &Extraction{Log: slog.New(slog.NewTextHandler(&buf, nil)), Pause: 5 * time.Second}
	e.logProgress(1, ExtractStats{Done: 10, Backlog: 30}, 2*time.Second, 0)
	e.logProgress(2, ExtractStats{Done: 20, Backlog: 30}, 9*time.Second, 5*time.Second)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " eta_s=14") || !strings.HasSuffix(lines[1], " eta_s=7") {
		t.Errorf("progress lines:\n%s\nwant eta_s=14 (20 x 0.2 s + 2 pauses of 5 s), then eta_s=7 (10 x 0.2 s + 1 pause)", buf.String())
	}
}
