package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// A delta pass of records read per owner, interrupted, resumes as the same delta: the rerun reads
// the rows of the owners read since the last complete pass that the interrupted get had not
// stored, and no other owner's.
func TestPerRecordDeltaResumesAsADelta(t *testing.T) {
	t.Parallel()
	const method = "crm.timeline.comment.list"
	w := newWorld(t, bitrixfake.Options{Users: 60, Companies: 260, Seed: 24})
	for _, ent := range []string{people, enginetest.Firms, enginetest.FirmNotes} {
		w.Phases(w.Engine(), ent, "get")
	}
	// What the firms' delta pass does: it reads some of them again.
	const touched = 130 // three batches of 50 owners
	if _, err := w.Pool.Exec(w.Ctx, `UPDATE bitrix_records SET fetched_at = now(), modified_at = now() WHERE id IN (
SELECT id FROM bitrix_records WHERE entity = $1 ORDER BY id LIMIT $2)`, enginetest.Firms, touched); err != nil {
		t.Fatal(err)
	}
	calls := w.Portal.Stats().Calls[method]
	ctx, cancel := context.WithCancel(w.Ctx)
	defer cancel()
	e := w.Engine(func(c *engine.Config) {
		c.Concurrency = 1
		c.Source = &cancelOnBatch{Source: w.Source, method: method, n: 2, cancel: cancel}
	})
	if _, err := e.Get(ctx, enginetest.FirmNotes); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted get = %v, want context.Canceled", err)
	}
	st, err := w.Engine().Get(w.Ctx, enginetest.FirmNotes)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed {
		t.Error("the rerun did not resume the interrupted pass")
	}
	inv, err := engine.NewStore(w.Pool).Inventory(w.Ctx, enginetest.FirmNotes)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Kind != engine.PassDelta || !inv.Complete || inv.DeltaSince == nil {
		t.Errorf("the resumed pass is %s, complete %v, since %v; want a complete delta", inv.Kind, inv.Complete, inv.DeltaSince)
	}
	// The interrupted get had one batch of 50 owners stored, its second cut off: the rerun asks
	// for the 80 left, no more.
	if n := w.Portal.Stats().Calls[method] - calls; n < touched || n > touched+50 {
		t.Errorf("the interrupted delta and its rerun ran %s %d times, want %d to %d (the touched firms, one batch twice at most)",
			method, n, touched, touched+50)
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1 AND status = 'DELETED_AT_SOURCE'`, enginetest.FirmNotes); n != 0 {
		t.Errorf("%d notes concluded deleted, none was", n)
	}
}
