package engine

import (
	"context"
	"encoding/json"
	"maps"
)

// readFields lists the entity's custom fields on the portal as fields-get stores them: every
// page when the method pages, each row in user.userfield.list's shape (Normalize), leaving out
// rows that are not the entity's.
func (e *Engine) readFields(ctx context.Context, k *Entity) ([]json.RawMessage, error) {
	cf := k.Fields
	var out []json.RawMessage
	for start := 0; ; {
		resp, err := e.source.Call(ctx, cf.Method, fieldsParams(cf, start))
		if err != nil {
			return nil, err
		}
		rows, err := resp.Rows(cf.RowsPath...)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if cf.Normalize != nil {
				var keep bool
				if row, keep, err = cf.Normalize(row); err != nil {
					return nil, err
				} else if !keep {
					continue
				}
			}
			out = append(out, row)
		}
		if !cf.Paged || resp.Next == nil || len(rows) == 0 || *resp.Next <= start {
			return out, nil
		}
		start = *resp.Next
	}
}

// fieldsParams are the parameters of the custom fields' page at offset start (the only page of
// a method that does not page): readFields' and a rerun's prefetch's (prefetch.go).
func fieldsParams(cf *CustomFields, start int) map[string]any {
	params := maps.Clone(cf.Params)
	if params == nil {
		params = map[string]any{}
	}
	if cf.Paged {
		params["start"] = start
	}
	return params
}
