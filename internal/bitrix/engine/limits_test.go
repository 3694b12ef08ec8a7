package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/httplimit"
)

// TestGzipBombFailsTheGetOnceAndARerunConverges: a portal answering with a gzip bomb fails the
// get with the cap in its error, not retried (the same request gets the same answer; only the
// batch's two halves are asked, once), with nothing stored from it; once the portal answers normally, a rerun stores every
// record.
func TestGzipBombFailsTheGetOnceAndARerunConverges(t *testing.T) {
	t.Parallel()
	const people = 120
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: people, Seed: 1}, MaxAnswerBytes: 1 << 20})
	w.Portal.ServeGzipBombs("batch", 4<<30)
	w.Portal.ServeGzipBombs("user.get", 4<<30)
	_, err := w.Engine().Get(w.Ctx, enginetest.People)
	if !errors.Is(err, httplimit.ErrTooLarge) || !strings.Contains(err.Error(), "answer larger than 1048576 bytes") ||
		strings.Contains(err.Error(), w.Portal.Token()) {
		t.Fatalf("get: %v, want the cap's error without the token", err)
	}
	// The batch, then its two halves once (rest's splitTooLarge): both halves still over the cap
	// say the size is not one command's, and no more is asked.
	if n := w.Portal.Stats().Requests; n != 3 {
		t.Errorf("%d requests, want 3: a bomb is asked again only as the batch's two halves", n)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, enginetest.People); n != 0 {
		t.Errorf("%d people stored from a bomb", n)
	}
	w.Portal.StopGzipBombs()
	st, err := w.Engine().Get(w.Ctx, enginetest.People)
	if err != nil || st.Of(enginetest.People).Rows != people {
		t.Fatalf("rerun: %+v, %v; want all %d people", st, err, people)
	}
}
