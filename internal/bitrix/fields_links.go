package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// Custom fields of two types hold references, not values: employee (a user id) and crm (CRM
// records, "CO_12", "C_5", "D_7", "T40e_3" for item 3 of the smart process 1038 = 0x40e, or a
// bare id when the field allows one type only). For entities whose CustomFields say Links, set
// translates them through the id map like any reference. An employee value without a target id
// fails the record. A crm value may name a record migrated later (a company's field naming a
// deal) or not at all (a lead): it is sent as the portal has it, and verify lists it among the
// values kept untranslated.

// fieldLinks are an entity's custom fields that hold references.
type fieldLinks struct {
	employee []string
	// crm maps a crm field to the entity its bare ids name ("" when it allows several types,
	// and values carry their type's prefix).
	crm map[string]string
}

// crmPrefixes are the prefixes of crm field values and the entities they name.
var crmPrefixes = map[string]string{"CO": Companies, "C": Contacts, "D": Deals}

// loadFieldLinks reads which custom fields of the entity hold references, and the target ids of
// every record the records' values name.
func (rf *Refs) loadFieldLinks(ctx context.Context, db status.DB, ent *Entity, recs []Record) error {
	if ent.Fields == nil || !ent.Fields.Links {
		return nil
	}
	rows, err := db.Query(ctx, `SELECT field_name, payload->>'USER_TYPE_ID', coalesce(payload->'SETTINGS', 'null')
FROM bitrix_fields WHERE entity = $1 AND payload->>'USER_TYPE_ID' IN ('employee', 'crm') ORDER BY field_name`, ent.Name)
	if err != nil {
		return fmt.Errorf("custom fields of %s: %w", ent.Name, err)
	}
	rf.links = fieldLinks{crm: map[string]string{}}
	var name, typ string
	var settings []byte
	_, err = pgx.ForEachRow(rows, []any{&name, &typ, &settings}, func() error {
		if typ == "employee" {
			rf.links.employee = append(rf.links.employee, name)
		} else {
			rf.links.crm[name] = crmFieldEntity(settings)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("custom fields of %s: %w", ent.Name, err)
	}
	wanted := map[string][]string{}
	for _, r := range recs {
		fields, err := fieldsOf(r.Payload)
		if err != nil {
			return fmt.Errorf("%s %s: %w", ent.Name, r.SourceID, err)
		}
		for _, f := range rf.links.employee {
			wanted[Users] = append(wanted[Users], linkIDs(fields[f])...)
		}
		for f, single := range rf.links.crm {
			for _, v := range fieldValues(fields[f]) {
				if entity, id, ok := crmValue(v, single); ok {
					wanted[entity] = append(wanted[entity], id)
				}
			}
		}
	}
	if len(rf.links.crm) > 0 {
		types, err := loadAllIDs(ctx, db, CRMTypes)
		if err != nil {
			return err
		}
		rf.maps[CRMTypes] = types
	}
	for entity, ids := range wanted {
		m, err := loadIDMap(ctx, db, entity, ids)
		if err != nil {
			return err
		}
		if rf.maps[entity] == nil {
			rf.maps[entity] = idMap{}
		}
		for k, v := range m {
			rf.maps[entity][k] = v
		}
	}
	return nil
}

// crmFieldEntity reads a crm field's SETTINGS ({"COMPANY": "Y", "DEAL": "N", "DYNAMIC_1038":
// "Y"...}): the entity its bare ids name when it allows exactly one type, else "".
func crmFieldEntity(settings []byte) string {
	var m map[string]any
	if json.Unmarshal(settings, &m) != nil {
		return ""
	}
	var allowed []string
	for k, v := range m {
		if s, ok := v.(string); ok && s == "Y" {
			allowed = append(allowed, k)
		}
	}
	if len(allowed) != 1 {
		return ""
	}
	switch t := allowed[0]; {
	case t == "COMPANY":
		return Companies
	case t == "CONTACT":
		return Contacts
	case t == "DEAL":
		return Deals
	case strings.HasPrefix(t, "DYNAMIC_"):
		return Smart + ":" + strings.TrimPrefix(t, "DYNAMIC_")
	}
	return ""
}

// fieldValues are a custom field's values as text: one, or each of a list.
func fieldValues(raw json.RawMessage) []string {
	if isEmptyValue(raw) {
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	}
	var out []string
	for _, v := range list {
		if s := text(map[string]json.RawMessage{"v": v}, "v"); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// crmValue reads one crm field value: the entity and source id it names. single is the entity
// of the field's bare ids ("smart:1038" for a smart process's).
func crmValue(v, single string) (entity, id string, ok bool) {
	if prefix, rest, found := strings.Cut(v, "_"); found {
		if e, known := crmPrefixes[prefix]; known {
			return e, rest, true
		}
		if len(prefix) > 1 && prefix[0] == 'T' {
			if et, err := strconv.ParseInt(prefix[1:], 16, 64); err == nil {
				return Smart, strconv.FormatInt(et, 10) + ":" + rest, true
			}
		}
		return "", "", false // a lead (L_) or a type not migrated
	}
	if et, smart := strings.CutPrefix(single, Smart+":"); smart {
		return Smart, et + ":" + v, true
	}
	if single != "" {
		return single, v, true
	}
	return "", "", false
}

// translateFieldLinks rewrites the reference custom fields of a payload with target ids, keeping
// their shape (a list stays a list) and the crm values' prefixes.
func (rf *Refs) translateFieldLinks(fields map[string]json.RawMessage) error {
	for _, f := range rf.links.employee {
		raw, ok := fields[f]
		if !ok || isEmptyValue(raw) {
			continue
		}
		var out []string
		for _, id := range linkIDs(raw) {
			t, ok := rf.Target(Users, id)
			if !ok {
				return &UnresolvedError{Field: f, Entity: Users, SourceID: id}
			}
			out = append(out, t)
		}
		if raw[0] == '[' {
			fields[f] = mustJSON(out)
		} else if len(out) > 0 {
			fields[f] = mustJSON(out[0])
		}
	}
	for _, f := range sortedKeys(rf.links.crm) {
		raw, ok := fields[f]
		if !ok || isEmptyValue(raw) {
			continue
		}
		values := fieldValues(raw)
		for i, v := range values {
			values[i], _ = rf.crmTarget(v, rf.links.crm[f])
		}
		if raw[0] == '[' {
			fields[f] = mustJSON(values)
		} else if len(values) > 0 {
			fields[f] = mustJSON(values[0])
		}
	}
	return nil
}

// crmTarget translates one crm field value; ok is false (and the value unchanged) when the
// record it names has no target id.
func (rf *Refs) crmTarget(v, single string) (string, bool) {
	entity, id, ok := crmValue(v, single)
	if !ok {
		return v, false
	}
	t, ok := rf.Target(entity, id)
	if !ok {
		return v, false
	}
	prefix, _, prefixed := strings.Cut(v, "_")
	switch {
	case !prefixed:
		return t, true
	case entity == Smart:
		et, _, _ := strings.Cut(id, ":")
		tt, ok := rf.Target(CRMTypes, et)
		n, err := strconv.ParseInt(tt, 10, 64)
		if !ok || err != nil {
			return v, false
		}
		return "T" + strconv.FormatInt(n, 16) + "_" + t, true
	}
	return prefix + "_" + t, true
}

// untranslatedFieldLinks lists, for verify, the crm field values of IMPORT_OK records that were
// sent as the portal has them.
func (e *Engine) untranslatedFieldLinks(ctx context.Context, ent *Entity, r *VerifyReport) error {
	if ent.Fields == nil || !ent.Fields.Links {
		return nil
	}
	for after := int64(0); ; {
		rows, err := e.Pool.Query(ctx, `SELECT `+recordColumns+` FROM bitrix_records WHERE entity = $1 AND status = $2 AND id > $3
ORDER BY id LIMIT $4`, ent.Name, string(ImportOK), after, verifyChunk)
		if err != nil {
			return fmt.Errorf("verify %s: %w", ent.Name, err)
		}
		recs, err := pgx.CollectRows(rows, scanRecord)
		if err != nil {
			return fmt.Errorf("verify %s: %w", ent.Name, err)
		}
		if len(recs) == 0 {
			return nil
		}
		after = recs[len(recs)-1].ID
		rf := &Refs{maps: map[string]idMap{}}
		if err := rf.loadFieldLinks(ctx, e.Pool, ent, recs); err != nil {
			return err
		}
		for _, rec := range recs {
			fields, err := fieldsOf(rec.Payload)
			if err != nil {
				return err
			}
			for _, f := range sortedKeys(rf.links.crm) {
				for _, v := range fieldValues(fields[f]) {
					if _, ok := rf.crmTarget(v, rf.links.crm[f]); ok {
						continue
					}
					r.UntranslatedCount++
					if len(r.Untranslated) < maxListed {
						r.Untranslated = append(r.Untranslated, RecordIssue{Entity: ent.Name, SourceID: rec.SourceID,
							Status: string(rec.Status), Reason: fmt.Sprintf("%s %s names a record that has no target id: sent as the portal has it", f, v)})
					}
				}
			}
		}
	}
}

// loadAllIDs returns the whole id map of an entity with few records (smart process types).
func loadAllIDs(ctx context.Context, db status.DB, entity string) (idMap, error) {
	rows, err := db.Query(ctx, `SELECT source_id, target_id FROM bitrix_id_map WHERE entity = $1`, entity)
	if err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	out := idMap{}
	var sid, tid string
	if _, err := pgx.ForEachRow(rows, []any{&sid, &tid}, func() error {
		out[sid] = tid
		return nil
	}); err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	return out, nil
}
