package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A child record that waits for its parent (NEW, its parent not IMPORT_OK) cannot be accepted
// on its own: only a failed record can be acknowledged, and it goes by itself once its parent is
// imported. Verify therefore lists it with its parent, as a count on the parent's line ("N
// records wait for it"), not as a record of its own a person would try to acknowledge in vain;
// acknowledging the parent excuses it (excused).

// waitsForParent is the SQL condition, over the bitrix_records row aliased a of entity ent, of a
// child waiting for a parent that is stored and not imported.
func waitsForParent(a string, ent *Entity) string {
	if ent.Parent == "" {
		return "false"
	}
	return fmt.Sprintf(`(%[1]s.status = '%[2]s' AND EXISTS (SELECT 1 FROM bitrix_records wp WHERE wp.entity = '%[3]s'
    AND wp.source_id = %[1]s.parent_source_id AND wp.status <> '%[4]s'))`, a, New, ent.Parent, ImportOK)
}

// countWaiting sets, on every record the report lists of the family's parents, how many child
// records wait for it.
func (e *Engine) countWaiting(ctx context.Context, family []*Entity, r *VerifyReport) error {
	lists := []*[]RecordIssue{&r.NotImported, &r.Unreachable, &r.UnresolvedRefs, &r.Acknowledged}
	for i := range r.Children {
		lists = append(lists, &r.Children[i].NotImported)
	}
	for _, child := range family {
		if child.Parent == "" {
			continue
		}
		var parents []string
		for _, l := range lists {
			for _, is := range *l {
				if is.Entity == child.Parent {
					parents = append(parents, is.SourceID)
				}
			}
		}
		if len(parents) == 0 {
			continue
		}
		rows, err := e.Pool.Query(ctx, `SELECT c.parent_source_id, count(*) FROM bitrix_records c
WHERE c.entity = $1 AND c.parent_source_id = ANY($2) AND c.status = $3 GROUP BY 1`, child.Name, parents, string(New))
		if err != nil {
			return fmt.Errorf("count %s waiting for their %s: %w", child.Name, child.Parent, err)
		}
		n := map[string]int64{}
		var id string
		var c int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &c}, func() error { n[id] = c; return nil }); err != nil {
			return fmt.Errorf("count %s waiting for their %s: %w", child.Name, child.Parent, err)
		}
		for _, l := range lists {
			for j := range *l {
				if is := &(*l)[j]; is.Entity == child.Parent {
					is.Waiting += n[is.SourceID]
				}
			}
		}
	}
	return nil
}
