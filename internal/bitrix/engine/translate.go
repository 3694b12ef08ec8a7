package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/status"
)

// IDMap holds target ids of one entity by source id, as read from the id map for one batch.
type IDMap map[string]string

// Refs holds the target ids a batch of records refers to, by entity and source id.
type Refs struct {
	Maps map[string]IDMap
	// Enums are the entity's enumeration fields and their option mapping.
	Enums enumFields
	// known and complete say, for the entities of DropGone references, which referenced ids the
	// source has and whether their get is complete (links.go).
	known    map[string]map[string]bool
	complete map[string]bool
	// renames maps custom fields the target names differently (fields_names.go).
	renames map[string]string
	// Links are the custom fields whose values are references (fields_links.go).
	Links LinkedFields
	// custom are the entity's custom fields as fields-get read them, by normalised name (see
	// customKey), for payload hooks that must tell which values the target can hold.
	custom map[string]customField
	// shape is the canonical form of the entity's payload fields (canonical.go).
	shape *shapeSpec
}

// customField is one custom field of an entity and where it stands on the target.
type customField struct {
	Name, Type                 string
	OnTarget, System, Multiple bool
}

// customKey normalises a custom field's name the way the portal's methods spell it differently
// (some methods send UF_ABC_DEF as ufAbcDef): upper case, without underscores.
func customKey(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "_", "")) }

// CustomField returns the custom field a payload key names, if it names one.
func (r *Refs) CustomField(key string) (customField, bool) {
	f, ok := r.custom[customKey(key)]
	return f, ok
}

// Target returns the target id of a record of entity, if it was imported.
func (r *Refs) Target(entity, sourceID string) (string, bool) {
	id, ok := r.Maps[entity][sourceID]
	return id, ok
}

// Of returns the target ids of the entity's records these Refs loaded, for a payload hook that
// looks up many ids of one entity at once, such as a list of participants (nil when none was
// loaded).
func (r *Refs) Of(entity string) IDMap { return r.Maps[entity] }

// loadRefs reads the id map entries the records refer to: every Ref of the entity, and the
// parent of a child.
func loadRefs(ctx context.Context, db status.DB, ent *Entity, recs []Record) (*Refs, error) {
	wanted := map[string][]string{}
	for _, r := range recs {
		if ent.Parent != "" {
			wanted[ent.Parent] = append(wanted[ent.Parent], r.ParentSourceID)
		}
		if len(ent.Refs) == 0 {
			continue
		}
		fields, err := FieldsOf(r.Payload)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", ent.Name, r.SourceID, err)
		}
		for _, ref := range ent.Refs {
			wanted[ref.Entity] = append(wanted[ref.Entity], ref.ids(fields)...)
		}
	}
	enums, err := NewStore(db).loadEnumFields(ctx, ent)
	if err != nil {
		return nil, err
	}
	custom, err := NewStore(db).loadCustomFields(ctx, ent)
	if err != nil {
		return nil, err
	}
	out := &Refs{Maps: map[string]IDMap{}, Enums: enums, custom: custom}
	for name, ids := range wanted {
		m, err := NewStore(db).loadIDMap(ctx, name, ids)
		if err != nil {
			return nil, err
		}
		out.Maps[name] = m
	}
	if err := out.loadLinkState(ctx, db, ent, wanted); err != nil {
		return nil, err
	}
	if out.renames, err = loadRenames(ctx, db, ent); err != nil {
		return nil, err
	}
	if err := out.loadFieldLinks(ctx, db, ent, recs); err != nil {
		return nil, err
	}
	out.shape = shapeOf(ent, custom, out.renames)
	return out, nil
}

// shapeOf is the canonical form of the entity's payloads, its custom fields named as the target
// names them.
func shapeOf(ent *Entity, custom map[string]customField, renames map[string]string) *shapeSpec {
	shapes := make(map[string]customShape, len(custom))
	for _, f := range custom {
		name := f.Name
		if to, ok := renames[name]; ok {
			name = to
		}
		shapes[name] = customShape{Type: f.Type, Multiple: f.Multiple, OnTarget: f.OnTarget || f.System}
	}
	return newShapeSpec(ent, shapes)
}

// loadShape reads what the canonical form of the entity's payloads depends on, for comparing
// payloads without building them (verify).
func loadShape(ctx context.Context, db status.DB, ent *Entity) (*shapeSpec, error) {
	custom, err := NewStore(db).loadCustomFields(ctx, ent)
	if err != nil {
		return nil, err
	}
	renames, err := loadRenames(ctx, db, ent)
	if err != nil {
		return nil, err
	}
	return shapeOf(ent, custom, renames), nil
}

// UnresolvedError is a reference of a record that has no target id: the record is failed, never
// imported half-mapped.
type UnresolvedError struct {
	Field    string // the payload field holding the reference
	Entity   string // the entity it refers to
	SourceID string
}

func (e *UnresolvedError) Error() string {
	if e.SourceID == "" {
		return fmt.Sprintf("%s is empty: cannot map it to a target %s", e.Field, strings.TrimSuffix(e.Entity, "s"))
	}
	return fmt.Sprintf("%s %s: %s %s has no target id (not imported)", e.Field, e.SourceID,
		strings.TrimSuffix(e.Entity, "s"), e.SourceID)
}

// payloadFor builds what the target receives for a record (docs/target-import-api.md): the
// entity's Payload hook, or the row as the portal sent it with references replaced by target ids
// and every readable date written as ISO 8601 with its original offset (values the portal sent
// without one get the portal's); either way in its canonical form (canonical.go), so that the
// shape the portal happened to answer in never reaches the target. A record with an unreadable
// date or an unresolvable reference gets an error instead.
func payloadFor(ent *Entity, r Record, rf *Refs) (json.RawMessage, error) {
	payload, err := buildPayload(ent, r, rf)
	if err != nil {
		return nil, err
	}
	return rf.canonical(ent, payload)
}

// canonical rewrites a built payload into its canonical form.
func (rf *Refs) canonical(ent *Entity, payload json.RawMessage) (json.RawMessage, error) {
	shape := rf.shape
	if shape == nil { // Refs made by hand (tests): what the entity itself declares
		shape = newShapeSpec(ent, nil)
	}
	fields, err := FieldsOf(payload)
	if err != nil {
		return nil, err
	}
	if err := shape.canonicalize(fields); err != nil {
		return nil, fmt.Errorf("canonical payload: %w", err)
	}
	return MustJSON(fields), nil
}

// buildPayload is payloadFor before the canonical form.
func buildPayload(ent *Entity, r Record, rf *Refs) (json.RawMessage, error) {
	if reason := dateError(r.Dates, ent.Dates); reason != "" {
		return nil, fmt.Errorf("%s", reason)
	}
	if reason := unreachableReason(r.Payload); reason != "" {
		return nil, errors.New(reason) // never imported as if it were real (an empty text)
	}
	if ent.Payload != nil {
		return ent.Payload(r, rf)
	}
	fields, err := FieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	LocalDates(fields, r.Dates)
	if err := rf.Enums.Translate(fields); err != nil {
		return nil, err
	}
	if err := rf.translateFieldLinks(fields); err != nil {
		return nil, err
	}
	if err := TranslatePlain(ent, r, fields, rf); err != nil {
		return nil, err
	}
	rf.rename(fields)
	if ent.Finish != nil {
		if err := ent.Finish(fields, r, rf); err != nil {
			return nil, err
		}
	}
	return MustJSON(fields), nil
}

// TranslatePlain replaces the record's plain references (and a child's ParentField) in fields by
// target ids; an empty Optional one is left as the portal wrote it (links.go). Payload hooks
// call it for the plain references they keep.
func TranslatePlain(ent *Entity, r Record, fields map[string]json.RawMessage, rf *Refs) error {
	resolve := func(field, entity, sourceID string) error {
		id, ok := rf.Target(entity, sourceID)
		if !ok || sourceID == "" {
			return &UnresolvedError{Field: field, Entity: entity, SourceID: sourceID}
		}
		fields[field] = MustJSON(id)
		return nil
	}
	for _, ref := range ent.Refs {
		if ref.Values != nil {
			continue // only a payload hook can translate those
		}
		if ref.Many || ref.Optional || ref.DropGone {
			if err := rf.link(fields, ref); err != nil {
				return err
			}
			continue
		}
		if err := resolve(ref.Field, ref.Entity, Text(fields, ref.Field)); err != nil {
			return err
		}
	}
	if ent.ParentField != "" {
		return resolve(ent.ParentField, ent.Parent, r.ParentSourceID)
	}
	return nil
}

// LocalDates writes every readable date into fields as ISO 8601 in its original offset.
func LocalDates(fields map[string]json.RawMessage, dates map[string]Date) {
	for name, d := range dates {
		if local, ok := d.Local(); ok {
			fields[name] = MustJSON(local)
		}
	}
}

// Local returns the date as ISO 8601 in its original offset, if it was readable.
func (d Date) Local() (string, bool) {
	if d.Err != "" || d.UTC.IsZero() {
		return "", false
	}
	t, err := time.Parse("-07:00", d.Offset)
	if err != nil {
		return "", false
	}
	_, offset := t.Zone()
	return d.UTC.In(time.FixedZone(d.Offset, offset)).Format(time.RFC3339), true
}
