package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ingest-dev/ingest/internal/status"
)

// Custom fields of two of the portal's field types hold references, not values: employee (one
// id) and crm (records of a family of entities, in the family's own notation). For entities
// whose CustomFields have Links, set translates them through the id map like any reference. An
// employee value without a target id fails the record. A crm value may name a record migrated
// later or not at all: it is sent as the portal has it, and verify lists it among the values kept
// untranslated. The engine knows neither the entities these name nor how a crm value names one:
// FieldLinks and its LinkRules, given by the entities, say. (employee and crm are the portal's
// names of the two field types, not entities.)

// FieldLinks says what the reference custom fields of an entity name (CustomFields.Links).
type FieldLinks struct {
	// Employee is the entity whose records employee fields name by id.
	Employee string
	// CRM reads and writes the values of crm fields; nil leaves them as they are.
	CRM LinkRules
}

// LinkRules are how a family of entities writes links to its records in crm field values (a
// prefix naming the entity and the id, or a bare id where a field allows one type only).
type LinkRules interface {
	// FieldEntity is the entity whose records a field's bare ids name, from the field's
	// SETTINGS; "" when the field allows several types and its values name theirs.
	FieldEntity(settings []byte) string
	// Value reads one value of a field whose bare ids name single: the entity and source id it
	// names; ok is false for a value that names nothing migrated.
	Value(v, single string) (entity, id string, ok bool)
	// Maps lists the entities whose whole id map Rewrite may look up (dictionaries of few records).
	Maps() []string
	// Rewrite writes value v, which names entity's record id, as naming its target id t, in v's
	// notation; target looks up other id maps. ok is false when it cannot.
	Rewrite(v, entity, id, t string, target func(entity, id string) (string, bool)) (string, bool)
}

// LinkedFields are an entity's custom fields that hold references, with what each names, so
// that set can translate them through the id map like the declared Refs.
type LinkedFields struct {
	*FieldLinks
	employee []string
	// crm maps a crm field to the entity its bare ids name ("" when it allows several types,
	// and values carry their type).
	crm map[string]string
}

// loadFieldLinks reads which custom fields of the entity hold references, and the target ids of
// every record the records' values name.
func (rf *Refs) loadFieldLinks(ctx context.Context, db status.DB, ent *Entity, recs []Record) error {
	if ent.Fields == nil || ent.Fields.Links == nil {
		return nil
	}
	rf.Links = LinkedFields{FieldLinks: ent.Fields.Links, crm: map[string]string{}}
	err := NewStore(db).eachLinkField(ctx, ent.Name, func(name, typ string, settings []byte) {
		switch {
		case typ == "employee":
			rf.Links.employee = append(rf.Links.employee, name)
		case rf.Links.CRM != nil:
			rf.Links.crm[name] = rf.Links.CRM.FieldEntity(settings)
		}
	})

	if err != nil {
		return fmt.Errorf("custom fields of %s: %w", ent.Name, err)
	}
	wanted := map[string][]string{}
	for _, r := range recs {
		fields, err := FieldsOf(r.Payload)
		if err != nil {
			return fmt.Errorf("%s %s: %w", ent.Name, r.SourceID, err)
		}
		for _, f := range rf.Links.employee {
			wanted[rf.Links.Employee] = append(wanted[rf.Links.Employee], linkIDs(fields[f])...)
		}
		for f, single := range rf.Links.crm {
			for _, v := range fieldValues(fields[f]) {
				if entity, id, ok := rf.Links.CRM.Value(v, single); ok {
					wanted[entity] = append(wanted[entity], id)
				}
			}
		}
	}
	if len(rf.Links.crm) > 0 {
		for _, entity := range rf.Links.CRM.Maps() {
			all, err := NewStore(db).loadAllIDs(ctx, entity)
			if err != nil {
				return err
			}
			rf.Maps[entity] = all
		}
	}
	for entity, ids := range wanted {
		m, err := NewStore(db).loadIDMap(ctx, entity, ids)
		if err != nil {
			return err
		}
		if rf.Maps[entity] == nil {
			rf.Maps[entity] = IDMap{}
		}
		for k, v := range m {
			rf.Maps[entity][k] = v
		}
	}
	return nil
}

// fieldValues are a custom field's values as text: one, or each of a list.
func fieldValues(raw json.RawMessage) []string {
	if IsEmptyValue(raw) {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	}
	var out []string
	for _, v := range list {
		if s := Text(map[string]json.RawMessage{"v": v}, "v"); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// translateFieldLinks rewrites the reference custom fields of a payload with target ids, keeping
// their shape (a list stays a list) and the crm values' prefixes.
func (rf *Refs) translateFieldLinks(fields map[string]json.RawMessage) error {
	for _, f := range rf.Links.employee {
		raw, ok := fields[f]
		if !ok || IsEmptyValue(raw) {
			continue
		}
		var out []string
		for _, id := range linkIDs(raw) {
			t, ok := rf.Target(rf.Links.Employee, id)
			if !ok {
				return &UnresolvedError{Field: f, Entity: rf.Links.Employee, SourceID: id}
			}
			out = append(out, t)
		}
		if raw[0] == '[' {
			fields[f] = MustJSON(out)
		} else if len(out) > 0 {
			fields[f] = MustJSON(out[0])
		}
	}
	for _, f := range SortedKeys(rf.Links.crm) {
		raw, ok := fields[f]
		if !ok || IsEmptyValue(raw) {
			continue
		}
		values := fieldValues(raw)
		for i, v := range values {
			values[i], _ = rf.CRMTarget(v, rf.Links.crm[f])
		}
		if raw[0] == '[' {
			fields[f] = MustJSON(values)
		} else if len(values) > 0 {
			fields[f] = MustJSON(values[0])
		}
	}
	return nil
}

// CRMTarget translates one crm field value; ok is false (and the value unchanged) when the
// record it names has no target id.
func (rf *Refs) CRMTarget(v, single string) (string, bool) {
	entity, id, ok := rf.Links.CRM.Value(v, single)
	if !ok {
		return v, false
	}
	t, ok := rf.Target(entity, id)
	if !ok {
		return v, false
	}
	if out, ok := rf.Links.CRM.Rewrite(v, entity, id, t, rf.Target); ok {
		return out, true
	}
	return v, false
}

// untranslatedFieldLinks lists, for verify, the crm field values of IMPORT_OK records that were
// sent as the portal has them.
func (e *Engine) untranslatedFieldLinks(ctx context.Context, ent *Entity, r *VerifyReport) error {
	if ent.Fields == nil || ent.Fields.Links == nil || ent.Fields.Links.CRM == nil {
		return nil
	}
	return e.store().eachImported(ctx, ent.Name, func(recs []Record) error {
		rf := &Refs{Maps: map[string]IDMap{}}
		if err := rf.loadFieldLinks(ctx, e.pool, ent, recs); err != nil {
			return err
		}
		for _, rec := range recs {
			fields, err := FieldsOf(rec.Payload)
			if err != nil {
				return err
			}
			for _, f := range SortedKeys(rf.Links.crm) {
				for _, v := range fieldValues(fields[f]) {
					if _, ok := rf.CRMTarget(v, rf.Links.crm[f]); ok {
						continue
					}
					r.UntranslatedCount++
					if len(r.Untranslated) < MaxListed {
						r.Untranslated = append(r.Untranslated, RecordIssue{Entity: ent.Name, SourceID: rec.SourceID,
							Status: string(rec.Status), Reason: fmt.Sprintf("%s %s names a record that has no target id: sent as the portal has it", f, v)})
					}
				}
			}
		}
		return nil
	})
}
