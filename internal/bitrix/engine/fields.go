package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/importapi"
)

// FieldStats sums up fields-get or fields-set.
type FieldStats struct {
	// Read counts the custom fields read from the source (fields-get).
	Read int
	// Created counts fields created on the target; Existing those it already had (fields-set).
	Created, Existing int
	// Failed counts fields the target refused, with its reasons in the log (fields-set).
	Failed int
	// Renamed counts fields the target names differently by its naming rules, each logged with
	// both names (fields-set).
	Renamed int
	// Skipped counts fields of a type the target cannot create for the entity (fields-set).
	Skipped int
	// Unsupported is set for an entity without custom fields in the REST API.
	Unsupported bool
}

// FieldsGet reads the entity's custom fields from the source into bitrix_fields (seed 000
// "<entity>-custom-fields-get") with the entity's Fields method, the portal's list of the
// entity's UF_* fields (some of these methods answer administrators only). An entity without
// custom fields in the REST API has nothing to do.
func (e *Engine) FieldsGet(ctx context.Context, entity string) (FieldStats, error) {
	k, err := e.registry.Command(entity)
	if err != nil {
		return FieldStats{}, err
	}
	return e.fieldsGet(ctx, k)
}

// fieldsGet is FieldsGet of a registered entity.
func (e *Engine) fieldsGet(ctx context.Context, k *Entity) (FieldStats, error) {
	if k.Fields == nil {
		e.log.Info(k.NoFields+": nothing to do", "entity", k.Name, "phase", "fields-get")
		return FieldStats{Unsupported: true}, nil
	}
	defer e.metrics.Phase(k.Name, "fields-get")()
	rows, err := e.readFields(ctx, k)
	if err != nil {
		return FieldStats{}, fmt.Errorf("fields-get %s: %w", k.Name, err)
	}
	b := &pgx.Batch{}
	for _, row := range rows {
		fields, err := FieldsOf(row)
		if err != nil {
			return FieldStats{}, fmt.Errorf("fields-get %s: %w", k.Name, err)
		}
		name := Text(fields, "FIELD_NAME")
		if name == "" {
			return FieldStats{}, fmt.Errorf("fields-get %s: field without FIELD_NAME: %.200s", k.Name, row)
		}
		sum, err := checksum(row, nil)
		if err != nil {
			return FieldStats{}, err
		}
		queueField(b, k.Name, name, row, sum)
	}
	if err := e.pool.SendBatch(ctx, b).Close(); err != nil {
		return FieldStats{}, fmt.Errorf("fields-get %s: store: %w", k.Name, err)
	}
	e.log.Info("custom fields read", "entity", k.Name, "fields", len(rows))
	return FieldStats{Read: len(rows)}, nil
}

// FieldsSet creates on the target the custom fields fields-get read that it does not have yet
// (seed 000 "<entity>-custom-fields-set"). The target creates by name idempotently, so a rerun
// creates nothing twice; custom_fields_created_total counts the fields created.
func (e *Engine) FieldsSet(ctx context.Context, entity string) (FieldStats, error) {
	k, err := e.registry.Command(entity)
	if err != nil {
		return FieldStats{}, err
	}
	return e.fieldsSet(ctx, k)
}

// fieldsSet is FieldsSet of a registered entity.
func (e *Engine) fieldsSet(ctx context.Context, k *Entity) (FieldStats, error) {
	if k.Fields == nil {
		e.log.Info(k.NoFields+": nothing to do", "entity", k.Name, "phase", "fields-set")
		return FieldStats{Unsupported: true}, nil
	}
	defer e.metrics.Phase(k.Name, "fields-set")()
	var st FieldStats
	var want []importapi.Field
	var sources, system []string
	err := e.store().eachFieldNotOnTarget(ctx, k.Name, func(name string, payload []byte) error {
		f, err := targetField(payload)
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		switch {
		case k.Fields.system(name):
			system = append(system, name)
		case !k.Fields.CanCreate(f.Type):
			st.Skipped++
			e.log.Warn("custom field not created: the target cannot create fields of its type; its values are not migrated",
				"entity", k.Name, "field", name, "type", f.Type, "creatable", strings.Join(k.Fields.Creatable, ", "))
		default:
			want, sources = append(want, f), append(sources, name)
		}
		return nil
	})

	if err != nil {
		return st, fmt.Errorf("fields-set %s: %w", k.Name, err)
	}
	if len(system) > 0 {
		if err := e.store().markFieldsOnTarget(ctx, k.Name, system); err != nil {
			return st, fmt.Errorf("fields-set %s: %w", k.Name, err)
		}
		st.Existing += len(system)
	}
	renames, err := e.fieldNames(ctx, k)
	if err != nil {
		return st, fmt.Errorf("fields-set %s: %w", k.Name, err)
	}
	for i := range want {
		if n, ok := renames[sources[i]]; ok {
			e.log.Warn("custom field renamed on the target by its naming rules", "entity", k.Name,
				"field", sources[i], "target_name", n.Name, "why", n.Why)
			want[i].Name = n.Name
			st.Renamed++
		}
	}
	if err := e.createFields(ctx, k, want, sources, &st); err != nil {
		return st, err
	}
	unmatched, err := e.mapOptions(ctx, k, renames)
	if err != nil {
		return st, err
	}
	for _, o := range unmatched {
		e.log.Warn("enumeration option has no target option: records with it will fail on set", "entity", k.Name, "option", o)
	}
	e.metrics.CustomFieldsCreated.WithLabelValues(k.Name).Add(float64(st.Created))
	e.log.Info("custom fields set", "entity", k.Name, "created", st.Created, "existing", st.Existing, "failed", st.Failed,
		"renamed", st.Renamed, "not_creatable", st.Skipped)
	if st.Failed > 0 {
		return st, fmt.Errorf("fields-set %s: the target refused %d custom fields (see the log)", k.Name, st.Failed)
	}
	return st, nil
}

// createFields creates the fields on the target and marks those it has as on_target; sources
// are the portal's names of the fields, in the same order.
func (e *Engine) createFields(ctx context.Context, k *Entity, want []importapi.Field, sources []string, st *FieldStats) error {
	if len(want) == 0 {
		e.log.Info("no custom fields to create", "entity", k.Name)
		return nil
	}
	results, err := e.target.AddFields(ctx, k.Name, want)
	if err != nil {
		return fmt.Errorf("fields-set %s: %w", k.Name, err)
	}
	for i, res := range results {
		if res.Error != nil {
			st.Failed++
			e.log.Warn("custom field not created on the target", "entity", k.Name, "field", want[i].Name, "cause", res.Error.Error())
			continue
		}
		created := res.Status == "created"
		if err := e.store().markFieldCreated(ctx, k.Name, sources[i], created); err != nil {
			return fmt.Errorf("fields-set %s: %w", k.Name, err)
		}
		if created {
			st.Created++
		} else {
			st.Existing++
		}
	}
	return nil
}

// targetField maps a user.userfield.list row (research/bitrix.md §5.1) to the target's field.
func targetField(payload []byte) (importapi.Field, error) {
	var uf struct {
		FieldName      string          `json:"FIELD_NAME"`
		UserTypeID     string          `json:"USER_TYPE_ID"`
		Multiple       string          `json:"MULTIPLE"`
		Settings       json.RawMessage `json:"SETTINGS"`
		EditFormLabel  json.RawMessage `json:"EDIT_FORM_LABEL"`
		ListColumnName json.RawMessage `json:"LIST_COLUMN_LABEL"`
		List           []struct {
			Sort  json.RawMessage `json:"SORT"`
			Value string          `json:"VALUE"`
			Def   string          `json:"DEF"`
			XMLID string          `json:"XML_ID"`
		} `json:"LIST"`
	}
	if err := json.Unmarshal(payload, &uf); err != nil {
		return importapi.Field{}, fmt.Errorf("decode userfield: %w", err)
	}
	f := importapi.Field{Name: uf.FieldName, Type: uf.UserTypeID, Multiple: uf.Multiple == "Y", Label: uf.FieldName}
	for _, raw := range []json.RawMessage{uf.EditFormLabel, uf.ListColumnName} {
		if l := label(raw); l != "" {
			f.Label = l
			break
		}
	}
	if !IsEmptyValue(uf.Settings) {
		f.Settings = uf.Settings
	}
	for _, o := range uf.List {
		sort, _ := strconv.Atoi(Text(map[string]json.RawMessage{"s": o.Sort}, "s"))
		f.Options = append(f.Options, importapi.Option{Value: o.Value, Sort: sort, Default: o.Def == "Y", XMLID: o.XMLID})
	}
	return f, nil
}

// label reads a label given as a string or as {lang: text}, preferring Russian, then English.
func label(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var byLang map[string]string
	if json.Unmarshal(raw, &byLang) != nil {
		return ""
	}
	for _, lang := range []string{"ru", "en"} {
		if byLang[lang] != "" {
			return byLang[lang]
		}
	}
	for _, k := range SortedKeys(byLang) {
		if byLang[k] != "" {
			return byLang[k]
		}
	}
	return ""
}
