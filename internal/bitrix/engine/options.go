package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/importapi"
)

// Enumeration custom fields hold the portal's option ids (UF_USR_LEVEL: "43" or [26, 27]). The
// target knows its own options by its own ids (docs/target-import-api.md), so fields-set matches
// each source option to the target's (by XML_ID when both have one, else by value) and records
// the pair in bitrix_field_options; set then sends enumeration values as target option ids, and
// a value without a target option fails the record with that reason.

// mapOptions records the target option of every option of the entity's enumeration fields that
// the target has. It returns the source options left without one, as "FIELD: value (id)".
func (e *Engine) mapOptions(ctx context.Context, ent *Entity, renames map[string]fieldName) ([]string, error) {
	onTarget, err := e.target.Fields(ctx, ent.Name)
	if err != nil {
		return nil, fmt.Errorf("fields-set %s: read the target's fields: %w", ent.Name, err)
	}
	byName := map[string]importapi.Field{}
	for _, f := range onTarget {
		byName[strings.ToUpper(f.Name)] = f
	}
	type list struct {
		List []struct {
			ID    json.RawMessage `json:"ID"`
			Value string          `json:"VALUE"`
			XMLID string          `json:"XML_ID"`
		} `json:"LIST"`
	}
	var unmatched []string
	b := &pgx.Batch{}
	err = e.store().eachEnumField(ctx, ent.Name, func(name string, payload []byte) error {
		var l list
		if err := json.Unmarshal(payload, &l); err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		targetName := name
		if n, renamed := renames[name]; renamed {
			targetName = n.Name
		}
		target, ok := byName[strings.ToUpper(targetName)]
		for _, o := range l.List {
			id := Text(map[string]json.RawMessage{"id": o.ID}, "id")
			match := ""
			for _, t := range target.Options {
				if (o.XMLID != "" && t.XMLID == o.XMLID) || (match == "" && t.Value == o.Value) {
					match = t.ID
				}
			}
			if !ok || match == "" {
				unmatched = append(unmatched, fmt.Sprintf("%s: %q (%s)", name, o.Value, id))
				continue
			}
			queueOption(b, ent.Name, name, id, match, o.Value)
		}
		return nil
	})

	if err != nil {
		return nil, fmt.Errorf("fields-set %s: %w", ent.Name, err)
	}
	if err := e.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("fields-set %s: store option mapping: %w", ent.Name, err)
	}
	return unmatched, nil
}

// enumFields are an entity's enumeration fields as set must send them: the option mapping of
// each field known to be on the target, and the fields read by fields-get that are not on the
// target yet (their values cannot be sent).
type enumFields struct {
	options  map[string]map[string]string // field -> source option id -> target option id
	notReady map[string]bool
}

// Translate rewrites the enumeration values in fields as target option ids, keeping the shape
// (a list stays a list); an empty value (false, "", null) stays as it is.
func (ef enumFields) Translate(fields map[string]json.RawMessage) error {
	for name := range ef.notReady {
		if raw, ok := fields[name]; ok && !IsEmptyValue(raw) {
			return fmt.Errorf("%s is an enumeration field not on the target yet: run fields-set", name)
		}
	}
	for name, options := range ef.options {
		raw, ok := fields[name]
		if !ok || IsEmptyValue(raw) {
			continue
		}
		mapOne := func(v json.RawMessage) (string, error) {
			id := Text(map[string]json.RawMessage{"v": v}, "v")
			t, ok := options[id]
			if !ok {
				return "", fmt.Errorf("%s option %s has no target option (not created by fields-set)", name, id)
			}
			return t, nil
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil {
			out := make([]string, 0, len(list))
			for _, v := range list {
				if IsEmptyValue(v) {
					continue
				}
				t, err := mapOne(v)
				if err != nil {
					return err
				}
				out = append(out, t)
			}
			fields[name] = MustJSON(out)
			continue
		}
		t, err := mapOne(raw)
		if err != nil {
			return err
		}
		fields[name] = MustJSON(t)
	}
	return nil
}
