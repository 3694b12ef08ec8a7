package habr_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/habrfake"
	"github.com/ingest-dev/ingest/internal/habr"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// A page whose article text holds a NUL byte and bytes that are not UTF-8 (the fake's
// FaultBadText, in a recorded page and in a rendered one) is extracted: the Markdown keeps the
// text with the NUL removed and each bad byte replaced with U+FFFD, and the publication is named
// in a warn line and counted. Before, the page failed to be cached, on every run.
func TestExtractCleansTextPostgresCannotStore(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t)
	if _, err := b.discover(t); err != nil {
		t.Fatal(err)
	}
	ids := []int64{568382, 461617}
	b.keepOnly(t, ids...)
	for _, id := range ids {
		if err := b.fake.SetFault(b.pathOf(t, id), habrfake.Fault{Kind: habrfake.FaultBadText}); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	m := metrics.New()
	x := &habr.Extraction{Pool: b.pool, Fetcher: b.fetch, Extractor: habr.NewExtractor(), Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Metrics: m, Actor: "test", Pause: -1}
	if _, err := x.Run(b.ctx); err != nil {
		t.Fatalf("extract: %v", err)
	}
	const want = "Bad text: caf\uFFFD \uFFFD."
	for _, id := range ids {
		p, md, err := habr.GetPublication(b.ctx, b.pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != habr.Extracted || md == nil {
			t.Errorf("publication %d: %s (%s), want extracted", id, p.Status, p.LastError)
			continue
		}
		if !strings.Contains(md.Text, want) || strings.ContainsRune(md.Text, 0) {
			t.Errorf("publication %d: Markdown lacks %q:\n%.600s", id, want, md.Text)
		}
		if !strings.Contains(logs.String(), "publication_id="+strconv.FormatInt(id, 10)) || !strings.Contains(logs.String(), "text Postgres cannot store") {
			t.Errorf("no warn line naming publication %d:\n%s", id, logs.String())
		}
	}
	if got := m.Snapshot()["records_text_cleaned_total{entity=habr_publications}"]; got != 2 {
		t.Errorf("records_text_cleaned_total = %v, want 2", got)
	}
}
