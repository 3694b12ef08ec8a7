package engine_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
)

// listedRecords is every record a verify report names as keeping the entity from being verified
// or as not migrated, by entity and portal id: what a person reads in `bitrix status` and
// acknowledges.
func listedRecords(r engine.VerifyReport) map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	add := func(is []engine.RecordIssue) {
		for _, i := range is {
			if k := i.Entity + " " + i.SourceID; !seen[k] {
				seen[k] = true
				out[i.Entity] = append(out[i.Entity], i.SourceID)
			}
		}
	}
	add(r.NotImported)
	add(r.UnresolvedRefs)
	add(r.Unreachable)
	add(r.Missing)
	for _, c := range r.Children {
		add(c.NotImported)
	}
	return out
}

// TestAcknowledgingEveryListedRecordMakesVerifyPass: posts whose author the portal no longer lists
// fail (an unresolved reference), and their children wait for them (NEW). Verify fails naming the
// posts, with the children waiting counted on each post's line rather than listed as records of
// their own; a person who acknowledges every record verify lists gets a clean verify, which
// counts the acknowledged records and the children excused with their acknowledged post.
func TestAcknowledgingEveryListedRecordMakesVerifyPass(t *testing.T) {
	t.Parallel()
	w := remarksWorld(t, 46, func(w *enginetest.World) {
		// An author of visible posts, not the webhook's user, who left the portal before people were read.
		for _, p := range w.Portal.PostInfos() {
			if p.Visible && p.Author != 1 && len(p.Comments) > 0 {
				w.Portal.DeleteUser(p.Author)
				return
			}
		}
		w.T.Fatal("no visible post with comments by another author")
	})
	e := w.Engine()
	r, err := e.Verify(w.Ctx, enginetest.Posts)
	if err != nil || r.Clean() {
		t.Fatalf("verify of posts whose author is gone: %v, %s; want problems", err, r.Summary())
	}
	// Child records waiting for a parent that is not imported are listed with it.
	waiting := int64(w.Count(`SELECT count(*) FROM bitrix_records c JOIN bitrix_records p ON p.entity = 'posts'
AND p.source_id = c.parent_source_id AND p.status <> 'IMPORT_OK' WHERE c.entity = ANY($1) AND c.status = 'NEW'`,
		[]string{enginetest.PostAudiences, remarks}))
	// A post listed twice (not imported, and why: its unresolved author) counts its children once.
	var listedWaiting int64
	counted := map[string]bool{}
	for _, l := range [][]engine.RecordIssue{r.NotImported, r.Unreachable, r.UnresolvedRefs} {
		for _, i := range l {
			if k := i.Entity + " " + i.SourceID; !counted[k] {
				counted[k] = true
				listedWaiting += i.Waiting
			}
		}
	}
	if waiting == 0 || listedWaiting != waiting {
		t.Errorf("%d child records wait, %d listed with a parent; want them all, and some", waiting, listedWaiting)
	}
	listed := listedRecords(r)
	t.Logf("first verify: %s; listed %v", r.Summary(), listed)
	if len(listed[enginetest.Posts]) == 0 {
		t.Fatalf("verify fails without naming a post: %s", r.Summary())
	}
	acknowledged := 0
	for entity, ids := range listed {
		found, err := engine.Machine.Resolve(w.Ctx, w.Pool, entity, ids)
		if err != nil {
			t.Fatal(err)
		}
		var rows []int64
		for _, id := range ids {
			rows = append(rows, found[id])
		}
		res, err := engine.Machine.Acknowledge(w.Ctx, w.Pool, rows, "known", "test")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range res {
			if x.Err != nil {
				t.Errorf("%s: %v", entity, x.Err)
			}
		}
		acknowledged += len(ids)
	}
	r, err = e.Verify(w.Ctx, enginetest.Posts)
	if err != nil || !r.Clean() {
		t.Fatalf("verify after acknowledging %v: %v, %s", listed, err, r.Summary())
	}
	// The children of an acknowledged post that were not acknowledged themselves go with it.
	excused := int64(w.Count(`SELECT count(*) FROM bitrix_records c JOIN bitrix_records p ON p.entity = 'posts'
AND p.source_id = c.parent_source_id AND p.acknowledged_at IS NOT NULL WHERE c.entity = ANY($1) AND c.acknowledged_at IS NULL`,
		[]string{enginetest.PostAudiences, remarks}))
	if r.AcknowledgedCount != int64(acknowledged) || r.AcknowledgedWaiting != excused || excused < waiting {
		t.Errorf("verify counts %d acknowledged records and %d excused with them, want %d and %d (%d of them waiting)",
			r.AcknowledgedCount, r.AcknowledgedWaiting, acknowledged, excused, waiting)
	}
}
