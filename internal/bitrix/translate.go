package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// idMap holds target ids of one entity by source id.
type idMap map[string]string

// loadIDMap returns the target ids of those of the source ids that were imported.
func loadIDMap(ctx context.Context, db status.DB, entity string, sourceIDs []string) (idMap, error) {
	out := idMap{}
	if len(sourceIDs) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, `SELECT source_id, target_id FROM bitrix_id_map WHERE entity = $1 AND source_id = ANY($2)`, entity, sourceIDs)
	if err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	var sid, tid string
	_, err = pgx.ForEachRow(rows, []any{&sid, &tid}, func() error {
		out[sid] = tid
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s id map: %w", entity, err)
	}
	return out, nil
}

// refs are the id maps a batch of records needs for its references.
type refs struct {
	users, groups idMap
}

// loadRefs reads the id map entries the records refer to: a group's owner, a membership's user
// and group.
func loadRefs(ctx context.Context, db status.DB, entity string, recs []Record) (refs, error) {
	var users, groups []string
	for _, r := range recs {
		switch entity {
		case Groups:
			fields, err := fieldsOf(r.Payload)
			if err != nil {
				return refs{}, fmt.Errorf("group %s: %w", r.SourceID, err)
			}
			users = append(users, text(fields, "OWNER_ID"))
		case GroupMembers:
			group, user, _ := strings.Cut(r.SourceID, ":")
			users, groups = append(users, user), append(groups, group)
		}
	}
	var out refs
	var err error
	if out.users, err = loadIDMap(ctx, db, Users, users); err != nil {
		return out, err
	}
	out.groups, err = loadIDMap(ctx, db, Groups, groups)
	return out, err
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

// payloadFor builds what the target receives for a record (docs/target-import-api.md): the row
// as the portal sent it, with references replaced by target ids and every readable date written
// as ISO 8601 with its original offset (values the portal sent without one get the portal's).
// A record with an unreadable date or an unresolvable reference gets an error instead.
func payloadFor(k kind, r Record, rf refs) (json.RawMessage, error) {
	if reason := dateError(r.Dates, k.dates); reason != "" {
		return nil, fmt.Errorf("%s", reason)
	}
	fields, err := fieldsOf(r.Payload)
	if err != nil {
		return nil, err
	}
	for name, d := range r.Dates {
		if local, ok := d.local(); ok {
			fields[name] = mustJSON(local)
		}
	}
	resolve := func(field, entity, sourceID string, m idMap) error {
		id, ok := m[sourceID]
		if !ok || sourceID == "" {
			return &UnresolvedError{Field: field, Entity: entity, SourceID: sourceID}
		}
		fields[field] = mustJSON(id)
		return nil
	}
	switch k.name {
	case Groups:
		if err := resolve("OWNER_ID", Users, text(fields, "OWNER_ID"), rf.users); err != nil {
			return nil, err
		}
	case GroupMembers:
		group, user, _ := strings.Cut(r.SourceID, ":")
		if err := resolve("USER_ID", Users, user, rf.users); err != nil {
			return nil, err
		}
		if err := resolve("GROUP_ID", Groups, group, rf.groups); err != nil {
			return nil, err
		}
	}
	return mustJSON(fields), nil
}

// local returns the date as ISO 8601 in its original offset, if it was readable.
func (d Date) local() (string, bool) {
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
