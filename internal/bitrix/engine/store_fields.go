package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/pgtext"
)

// The store's queries of the custom fields read by fields-get (bitrix_fields, bitrix_field_options).

func (s Store) fieldNamesOf(ctx context.Context, k *Entity) (map[string]fieldName, error) {
	out := map[string]fieldName{}
	if k.Fields == nil || k.Fields.Naming == nil {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `SELECT field_name FROM bitrix_fields WHERE entity = $1 ORDER BY field_name`, k.Name)
	if err != nil {
		return nil, fmt.Errorf("custom fields of %s: %w", k.Name, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("custom fields of %s: %w", k.Name, err)
	}
	for _, name := range names {
		n, renamed, err := k.Fields.Naming.Target(ctx, s.db, name)
		if err != nil {
			return nil, fmt.Errorf("custom field %s of %s: %w", name, k.Name, err)
		}
		if renamed {
			out[name] = n
		}
	}
	return out, nil
}

// storedFieldNames returns the names of the custom fields fields-get read for an entity.
func (s Store) storedFieldNames(ctx context.Context, entity string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT field_name FROM bitrix_fields WHERE entity = $1 ORDER BY field_name`, entity)
	if err != nil {
		return nil, fmt.Errorf("custom fields of %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("custom fields of %s: %w", entity, err)
	}
	return out, nil
}

func (s Store) loadEnumFields(ctx context.Context, ent *Entity) (enumFields, error) {
	out := enumFields{options: map[string]map[string]string{}, notReady: map[string]bool{}}
	if ent.Fields == nil {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `SELECT f.field_name, f.on_target, o.source_option_id, o.target_option_id
FROM bitrix_fields f LEFT JOIN bitrix_field_options o ON o.entity = f.entity AND o.field_name = f.field_name
WHERE f.entity = $1 AND f.payload->>'USER_TYPE_ID' = 'enumeration'`, ent.Name)
	if err != nil {
		return out, fmt.Errorf("load %s enumeration options: %w", ent.Name, err)
	}
	var name string
	var onTarget bool
	var src, tgt *string
	_, err = pgx.ForEachRow(rows, []any{&name, &onTarget, &src, &tgt}, func() error {
		if !onTarget {
			out.notReady[name] = true
			return nil
		}
		if out.options[name] == nil {
			out.options[name] = map[string]string{}
		}
		if src != nil {
			out.options[name][*src] = *tgt
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("load %s enumeration options: %w", ent.Name, err)
	}
	return out, nil
}

// loadCustomFields reads the entity's custom fields fields-get stored.
func (s Store) loadCustomFields(ctx context.Context, ent *Entity) (map[string]customField, error) {
	out := map[string]customField{}
	if ent.Fields == nil {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `SELECT field_name, coalesce(payload->>'USER_TYPE_ID', ''), on_target,
coalesce(payload->>'MULTIPLE', '') IN ('Y', 'true', '1') FROM bitrix_fields WHERE entity = $1`, ent.Name)
	if err != nil {
		return nil, fmt.Errorf("load %s custom fields: %w", ent.Name, err)
	}
	var f customField
	_, err = pgx.ForEachRow(rows, []any{&f.Name, &f.Type, &f.OnTarget, &f.Multiple}, func() error {
		f.System = ent.Fields.system(f.Name)
		out[customKey(f.Name)] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s custom fields: %w", ent.Name, err)
	}
	return out, nil
}

// queueField queues in b the upsert of one custom field read by fields-get.
func queueField(b *pgx.Batch, entity, name string, row []byte, sum string) {
	// A label people typed may hold what jsonb refuses (textclean.go): stored cleaned, as records are.
	row, _ = pgtext.JSON(row)
	b.Queue(`INSERT INTO bitrix_fields (entity, field_name, payload, checksum) VALUES ($1, $2, $3, $4)
ON CONFLICT (entity, field_name) DO UPDATE SET payload = EXCLUDED.payload, checksum = EXCLUDED.checksum, fetched_at = now()`,
		entity, name, string(row), sum)
}

// eachFieldNotOnTarget hands fn, by name, every custom field of the entity that fields-get read
// and the target does not have yet.
func (s Store) eachFieldNotOnTarget(ctx context.Context, entity string, fn func(name string, payload []byte) error) error {
	return s.eachField(ctx, `SELECT field_name, payload FROM bitrix_fields WHERE entity = $1 AND NOT on_target ORDER BY field_name`,
		entity, fn)

}

// eachField runs a query of the entity's fields (name, payload) and hands fn each row.
func (s Store) eachField(ctx context.Context, sql, entity string, fn func(name string, payload []byte) error) error {
	rows, err := s.db.Query(ctx, sql, entity)
	if err != nil {
		return err
	}
	var name string
	var payload []byte
	_, err = pgx.ForEachRow(rows, []any{&name, &payload}, func() error { return fn(name, payload) })
	return err
}

// markFieldsOnTarget records that the target has the entity's fields (every portal's system
// fields).
func (s Store) markFieldsOnTarget(ctx context.Context, entity string, names []string) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_fields SET on_target = true WHERE entity = $1 AND field_name = ANY($2)`, entity, names)
	return err
}

// markFieldCreated records that the target has the entity's field, and when fields-set created it.
func (s Store) markFieldCreated(ctx context.Context, entity, name string, created bool) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_fields SET on_target = true,
created_at = CASE WHEN $3 THEN now() ELSE created_at END WHERE entity = $1 AND field_name = $2`, entity, name, created)
	return err
}

// eachEnumField hands fn, by name, every enumeration field of the entity that fields-get read.
func (s Store) eachEnumField(ctx context.Context, entity string, fn func(name string, payload []byte) error) error {
	return s.eachField(ctx, `SELECT field_name, payload FROM bitrix_fields WHERE entity = $1
AND payload->>'USER_TYPE_ID' = 'enumeration' ORDER BY field_name`, entity, fn)

}

// queueOption queues in b the mapping of one option of an enumeration field to the target's.
func queueOption(b *pgx.Batch, entity, field, sourceID, targetID, value string) {
	value, _ = pgtext.String(value)
	b.Queue(`INSERT INTO bitrix_field_options (entity, field_name, source_option_id, target_option_id, value)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (entity, field_name, source_option_id)
DO UPDATE SET target_option_id = EXCLUDED.target_option_id, value = EXCLUDED.value`, entity, field, sourceID, targetID, value)
}

// eachLinkField hands fn, by name, the entity's custom fields of the two reference types
// (employee and crm), with their type and SETTINGS.
func (s Store) eachLinkField(ctx context.Context, entity string, fn func(name, typ string, settings []byte)) error {
	rows, err := s.db.Query(ctx, `SELECT field_name, payload->>'USER_TYPE_ID', coalesce(payload->'SETTINGS', 'null')
FROM bitrix_fields WHERE entity = $1 AND payload->>'USER_TYPE_ID' IN ('employee', 'crm') ORDER BY field_name`, entity)
	if err != nil {
		return err
	}
	var name, typ string
	var settings []byte
	_, err = pgx.ForEachRow(rows, []any{&name, &typ, &settings}, func() error { fn(name, typ, settings); return nil })
	return err
}

// fieldsNotOnTarget lists the entity's custom fields read by fields-get that the target does not
// have, as "NAME (type)", by name.
func (s Store) fieldsNotOnTarget(ctx context.Context, entity string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT field_name || ' (' || coalesce(payload->>'USER_TYPE_ID', '?') || ')' FROM bitrix_fields
WHERE entity = $1 AND NOT on_target ORDER BY field_name`, entity)
	if err != nil {
		return nil, fmt.Errorf("fields of %s not on the target: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("fields of %s not on the target: %w", entity, err)
	}
	return out, nil
}
