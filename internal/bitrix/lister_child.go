package bitrix

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// ChildFetch reads a child entity for each page of its parents with one call per parent, all of
// a page's calls in one batch: for methods that return every child of one parent at once, with
// no paging (sonet_group.user.get).
type ChildFetch struct {
	// Method is called once per parent with ParentParam set to the parent's id.
	Method      string
	ParentParam string
	// KeyField is the row field that, with the parent's id, identifies a child: its source id
	// is "<parent id>:<key>".
	KeyField string
	// ParentGone recognises the answer for a parent deleted between the listing and this call:
	// it has no children to migrate. Nil means every failure stops the get.
	ParentGone func(err error) bool
}

func (f *ChildFetch) fetch(ctx context.Context, e *Engine, child *Entity, parentIDs []string, zone *time.Location) ([]incoming, error) {
	cmds := make([]rest.Command, len(parentIDs))
	for i, id := range parentIDs {
		cmds[i] = rest.Command{Key: "p" + id, Method: f.Method, Params: map[string]any{f.ParentParam: id}}
	}
	var out []incoming
	err := e.batchEach(ctx, cmds, func(key string, r *rest.Response) error {
		parent := strings.TrimPrefix(key, "p")
		rows, err := r.Rows()
		if err != nil {
			return fmt.Errorf("%s of %s %s: %w", child.Name, child.Parent, parent, err)
		}
		for _, row := range rows {
			fields, err := fieldsOf(row)
			if err != nil {
				return fmt.Errorf("%s of %s %s: %w", child.Name, child.Parent, parent, err)
			}
			k := text(fields, f.KeyField)
			if k == "" {
				return fmt.Errorf("%s of %s %s: row without %s: %.200s", child.Name, child.Parent, parent, f.KeyField, row)
			}
			in, err := newIncoming(child, parent+":"+k, parent, row, fields, zone)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return nil
	}, func(key string, err error) error {
		parent := strings.TrimPrefix(key, "p")
		if f.ParentGone != nil && f.ParentGone(err) {
			e.Log.Warn("parent disappeared while its children were read", "entity", child.Name,
				"parent", child.Parent, "parent_id", parent, "error", err)
			return nil
		}
		return fmt.Errorf("%s of %s %s: %w", child.Name, child.Parent, parent, err)
	})
	return out, err
}

// isGroupGone recognises sonet_group.user.get's answer for a group that does not exist (400 with
// an empty code: research/bitrix.md §5.2).
func isGroupGone(err error) bool {
	apiErr, ok := errors.AsType[*rest.APIError](err)
	return ok && (strings.Contains(apiErr.Description, "group not found") ||
		strings.Contains(apiErr.Description, "Wrong socialnetwork group ID"))
}
