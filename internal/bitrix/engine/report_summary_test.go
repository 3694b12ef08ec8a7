package engine_test

import (
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// A clean verify's summary says what it compared: every imported record by content hash, and
// how many of them field by field; never "sampled" alone, which reads as if most went unchecked.
func TestCleanSummarySaysEveryRecordWasCompared(t *testing.T) {
	r := engine.VerifyReport{TargetCount: 300, Expected: 300, Checked: 300, Sampled: 50}
	got := r.Summary()
	for _, want := range []string{"clean: 300 on target of 300 expected", "300 records compared by content hash (every one imported, children included)", "50 of them field by field"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
}
