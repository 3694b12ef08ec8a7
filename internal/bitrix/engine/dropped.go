package engine

import (
	"context"
	"slices"

	"github.com/ingest-dev/ingest/internal/status"
)

// Links dropped, records kept: one rule for every entity. A reference the portal will not show
// (its entity's complete get never read the record: deleted, or hidden from the webhook's user,
// as the parent task of a subtask in a project the user is not in) drops the link, never the
// record, when the Ref says DropGone. The record is imported with the link null (or left out of
// its list), its children with it, and verify and `bitrix status` list the dropped link by record
// (verifyLinks). For a SelfRef, the parents-first pick lets such a record go as if it named no
// parent (selfGone); a record whose parent was read but failed still waits for it, and fails
// with the parent's reason (failOrphans).

// selfRef returns the entity's Ref that is its SelfRef.
func (ent *Entity) selfRef() (Ref, bool) {
	i := slices.IndexFunc(ent.Refs, func(r Ref) bool { return r.Field == ent.SelfRef && r.Entity == ent.Name })
	if ent.SelfRef == "" || i < 0 {
		return Ref{}, false
	}
	return ent.Refs[i], true
}

// selfGone reports whether a record of ent whose parent of the same entity is not stored may go
// without the link: the SelfRef drops gone links, and ent's last get read the whole portal.
func selfGone(ctx context.Context, db status.DB, ent *Entity) (bool, error) {
	ref, ok := ent.selfRef()
	if !ok || !ref.DropGone {
		return false, nil
	}
	inv, err := NewStore(db).loadInventory(ctx, ent.Name)
	if err != nil {
		return false, err
	}
	return inv.Pass > 0 && inv.Complete && inv.Limit == nil, nil
}
