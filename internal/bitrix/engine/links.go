package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// Links are references that a plain Ref (one field, one id, always set) does not describe: a
// list of ids (many to many), a reference that may be empty (0, "" or null), and a reference to
// a record the portal no longer has (deleted since). payloadFor translates them through the id map like any reference; an
// id without a target id fails the record, unless its entity's complete get never saw it and
// the Ref says DropGone: then the link alone is dropped and verify lists it.

// linkIDs reads the ids of a link field: one id, or a list of them (JSON array, or an object
// whose values are ids, as PHP sends some lists). Empty values ("", "0", 0, null, false) are no
// id.
func linkIDs(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if IsEmptyValue(raw) {
		return nil
	}
	var values []json.RawMessage
	switch raw[0] {
	case '[':
		if json.Unmarshal(raw, &values) != nil {
			return nil
		}
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		for _, k := range SortedKeys(m) {
			values = append(values, m[k])
		}
	default:
		values = []json.RawMessage{raw}
	}
	var out []string
	for _, v := range values {
		if id := Text(map[string]json.RawMessage{"v": v}, "v"); id != "" && id != "0" {
			out = append(out, id)
		}
	}
	return out
}

// link translates one link field of a payload: every id to its target id, a dropped one to
// null (or out of the list), an empty Optional one left as it is.
func (rf *Refs) link(fields map[string]json.RawMessage, ref Ref) error {
	ids := linkIDs(fields[ref.Field])
	if ref.Many {
		out := make([]string, 0, len(ids))
		for _, id := range ids {
			t, dropped, err := rf.resolveLink(ref, id)
			if err != nil {
				return err
			}
			if !dropped {
				out = append(out, t)
			}
		}
		if _, present := fields[ref.Field]; present || len(out) > 0 {
			fields[ref.Field] = MustJSON(out)
		}
		return nil
	}
	if len(ids) == 0 {
		if ref.Optional {
			return nil
		}
		return &UnresolvedError{Field: ref.Field, Entity: ref.Entity}
	}
	t, dropped, err := rf.resolveLink(ref, ids[0])
	switch {
	case err != nil:
		return err
	case dropped:
		fields[ref.Field] = json.RawMessage("null")
	default:
		fields[ref.Field] = MustJSON(t)
	}
	return nil
}

// resolveLink returns the target id of one referenced record, or dropped for a DropGone link
// to a record the portal no longer has.
func (rf *Refs) resolveLink(ref Ref, id string) (target string, dropped bool, err error) {
	if t, ok := rf.Target(ref.Entity, id); ok {
		return t, false, nil
	}
	if ref.DropGone && rf.Gone(ref.Entity, id) {
		return "", true, nil
	}
	return "", false, &UnresolvedError{Field: ref.Field, Entity: ref.Entity, SourceID: id}
}

// Gone reports whether the portal no longer has a record: its entity's last get read the whole
// portal, and it was not among what it read.
func (rf *Refs) Gone(entity, id string) bool {
	return rf.complete[entity] && !rf.known[entity][id]
}

// loadLinkState reads, for the entities of the DropGone references, which of the wanted ids
// the source has and whether the entity's get is complete and not limited by test_limit.
func (rf *Refs) loadLinkState(ctx context.Context, db status.DB, ent *Entity, wanted map[string][]string) error {
	rf.known, rf.complete = map[string]map[string]bool{}, map[string]bool{}
	for _, ref := range ent.Refs {
		if !ref.DropGone || rf.known[ref.Entity] != nil {
			continue
		}
		known, complete, err := NewStore(db).knownIDs(ctx, ref.Entity, wanted[ref.Entity])
		if err != nil {
			return err
		}
		rf.known[ref.Entity], rf.complete[ref.Entity] = known, complete
	}
	return nil
}

// verifyLinks checks every record's link field: each id has a target id, or was dropped because
// the portal no longer has the record (listed apart, not a problem). References of records not
// imported are their own reason of failure, listed with them; those are skipped here.
func (e *Engine) verifyLinks(ctx context.Context, ent *Entity, ref Ref, r *VerifyReport) error {
	unresolved := 0
	progress, err := e.refsProgress(ctx, ent, ref)
	if err != nil {
		return err
	}
	defer progress.end()
	for after := int64(0); ; {
		recs, err := e.store().linkPage(ctx, ent, ref.Field, after, importapi.MaxListItems)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		progress.add(len(recs))
		after = recs[len(recs)-1].id
		var ids []string
		for _, g := range recs {
			ids = append(ids, linkIDs(g.value)...)
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		mapped, err := e.store().loadIDMap(ctx, ref.Entity, ids)
		if err != nil {
			return err
		}
		known, complete, err := e.store().knownIDs(ctx, ref.Entity, ids)
		if err != nil {
			return err
		}
		for _, g := range recs {
			if g.status != string(ImportOK) {
				continue
			}
			for _, id := range linkIDs(g.value) {
				if _, ok := mapped[id]; ok {
					continue
				}
				noun := strings.TrimSuffix(ref.Entity, "s")
				issue := RecordIssue{Entity: ent.Name, SourceID: g.sourceID, Status: g.status}
				if ref.DropGone && complete && !known[id] {
					issue.Reason = fmt.Sprintf("%s %s: the portal does not show %s %s (deleted, or hidden from the webhook's user); imported without this link",
						ref.name(), id, noun, id)
					r.DroppedLinksCount++
					if len(r.DroppedLinks) < MaxListed {
						r.DroppedLinks = append(r.DroppedLinks, issue)
					}
					continue
				}
				issue.Reason = (&UnresolvedError{Field: ref.Field, Entity: ref.Entity, SourceID: id}).Error()
				unresolved++
				if len(r.UnresolvedRefs) < MaxListed {
					r.UnresolvedRefs = append(r.UnresolvedRefs, issue)
				}
			}
		}
	}
	if unresolved > 0 {
		r.Problem("%d %s links of %s have no target id", unresolved, ref.name(), ent.noun())
	}
	return nil
}
