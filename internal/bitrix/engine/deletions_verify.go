package engine

import (
	"context"
	"fmt"
	"strings"
)

// What verify makes of deletions: a record the portal deleted is no longer expected from the
// source; the target still holds it until set propagates the deletion, so the target's count is
// expected to include the deleted records it holds. Under keep they are listed apart, by portal
// id, and verify passes; under propagate a deleted record still on the target is a problem that
// set resolves.

// deletedRecords counts the records of a by-status count that the portal deleted.
func deletedRecords(byStatus map[string]int64) int64 {
	var n int64
	for _, s := range deletedStatuses {
		n += byStatus[string(s)]
	}
	return n
}

// setAsideDeleted takes the target's copies of records deleted on the portal out of what verifyAll
// would call extra: under keep they are listed apart, under propagate each is a problem until set
// removes it.
func (e *Engine) setAsideDeleted(ctx context.Context, ent *Entity, r *VerifyReport, onTarget map[string]targetEntry) error {
	ids, err := e.store().deletedIDs(ctx, ent.Name)
	if err != nil {
		return err
	}
	var held int64
	for _, id := range ids {
		key := idempotencyKey(ent.Name, id)
		t, ok := onTarget[key]
		if !ok {
			continue
		}
		delete(onTarget, key)
		held++
		r.DeletedAtSourceCount++
		if len(r.DeletedAtSource) < MaxListed {
			r.DeletedAtSource = append(r.DeletedAtSource, RecordIssue{Entity: ent.Name, SourceID: id, Status: string(DeletedAtSource),
				Reason: fmt.Sprintf("deleted on the portal; the target keeps it as %s", t.targetID)})
		}
	}
	if held > 0 && e.deletions == DeletionsPropagate {
		r.Problem("%d %s deleted on the portal are still on the target (BITRIX_DELETIONS=propagate): run `ingest bitrix %s set`",
			held, ent.noun(), verifiedAs(e.registry, ent))
	}
	return nil
}

// deletedNote is the line `bitrix status` shows for an entity's records deleted on the portal.
func deletedNote(d DeletedRecords) string {
	what := "kept on the target"
	if d.Status == string(DeletedOnTarget) {
		what = "removed from the target"
	}
	return fmt.Sprintf("%d deleted on the portal, %s: %s", len(d.IDs), what, strings.Join(d.IDs[:min(len(d.IDs), MaxListed)], " "))
}
