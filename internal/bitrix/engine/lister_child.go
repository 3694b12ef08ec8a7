package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// ChildFetch reads a child entity for each page of its parents with one call per parent, all of
// a page's calls in one batch: for methods that return every child of one parent at once, with
// no paging (the list of what belongs to one record). The
// children are stored with the page of parents, in its transaction.
type ChildFetch struct {
	// Method is called once per parent with ParentParam set to the parent's id.
	Method      string
	ParentParam string
	// Params, when set, builds the call's parameters for a parent instead (methods with
	// positional parameters take a list: [ID, ORDER]).
	Params func(parentID string) any
	// When, when set, says which parents the method is called for (those whose children are
	// not read another way); nil means every parent.
	When func(parent map[string]json.RawMessage) bool
	// KeyField is the row field that, with the parent's id, identifies a child: its source id
	// is "<parent id>:<key>".
	KeyField string
	// Whole makes one record of all of a parent's rows (items that refer to each other): source id the parent's id, payload {"items": [...]}; a parent without rows
	// has none.
	Whole bool
	// Clean, when set, drops what must not be stored from a row: URLs that carry a per-request
	// token, presentation that changes with every read.
	Clean func(row map[string]json.RawMessage)
	// ParentGone recognises the answer for a parent deleted between the listing and this call:
	// it has no children to migrate. Nil means every failure stops the get.
	ParentGone func(err error) bool
	// Refused recognises the portal's refusal to show one parent's children (an access error
	// for a parent the webhook's user may not read): they are kept as one record "<parent id>:0"
	// (the parent's id when Whole) that cannot be migrated, with the refusal as the reason, so
	// verify names them. Nil means every failure stops the get.
	Refused func(err error) bool
	// CountField, when set, is the parent's row field holding how many of these children the
	// portal has for it (a task's commentsCount), and CountSelect the name that selects it in
	// the parent's listing (COMMENTS_COUNT). A child deleted alone may move no date of its parent,
	// so no modification filter returns the parent; its count moves. A delta pass lists every
	// parent's count and reads again the parents whose count differs from their stored payload's
	// (delta_childcounts.go): the value is compared with itself, not with the children stored,
	// since what the portal counts need not be what the method returns (system messages).
	CountField, CountSelect string
}

// commands returns the calls that read the children of parents: one per parent that When
// allows, keyed "p" and the parent's id (fetch's, and a rerun's prefetch's: prefetch.go).
func (f *ChildFetch) commands(parents []Incoming) ([]rest.Command, error) {
	var cmds []rest.Command
	for _, p := range parents {
		if f.When != nil {
			fields, err := FieldsOf(p.payload)
			if err != nil {
				return nil, err
			}
			if !f.When(fields) {
				continue
			}
		}
		var params any = map[string]any{f.ParentParam: p.sourceID}
		if f.Params != nil {
			params = f.Params(p.sourceID)
		}
		cmds = append(cmds, rest.Command{Key: "p" + p.sourceID, Method: f.Method, Params: params})
	}
	return cmds, nil
}

// fetch reads the children of the parents. It returns them, and the parents whose children the
// portal returned in full (the others: not asked, When; refused; gone while they were read), whose
// stored children the fetch did not return are no longer on the portal (children_delta.go).
func (f *ChildFetch) fetch(ctx context.Context, e *Engine, child *Entity, parents []Incoming, zone *time.Location) ([]Incoming, []string, error) {
	cmds, err := f.commands(parents)
	if err != nil {
		return nil, nil, err
	}
	var out []Incoming
	var read []string
	// A page's parents are independent: their batches go at once (up to Concurrency), so a
	// small portal read in one range does not fetch its children one batch after another.
	err = e.batchEachConcurrently(ctx, cmds, func(key string, r *rest.Response) error {
		parent := strings.TrimPrefix(key, "p")
		rows, err := r.Rows()
		if err != nil {
			return fmt.Errorf("%s of %s %s: %w", child.Name, child.Parent, parent, err)
		}
		recs, err := f.records(child, parent, rows, zone)
		out = append(out, recs...)
		read = append(read, parent)
		return err
	}, func(key string, err error) error {
		parent := strings.TrimPrefix(key, "p")
		switch {
		case f.ParentGone != nil && f.ParentGone(err):
			e.log.Warn("parent disappeared while its children were read", "entity", child.Name,
				"parent", child.Parent, "parent_id", parent, "error", err)
			return nil
		case f.Refused != nil && f.Refused(err):
			id := parent + ":0" // no child's key is 0
			if f.Whole {
				id = parent
			}
			payload := MustJSON(MarkUnreachable(map[string]json.RawMessage{"method": MustJSON(f.Method)},
				fmt.Sprintf("out of reach: %s refused for %s %s: %v", f.Method, strings.TrimSuffix(child.Parent, "s"), parent, err)))
			fields, _ := FieldsOf(payload)
			in, err := NewIncoming(child, id, parent, payload, fields, zone)
			out = append(out, in)
			return err
		}
		return fmt.Errorf("%s of %s %s: %w", child.Name, child.Parent, parent, err)
	})
	return out, read, err
}

// records makes one parent's rows into child records.
func (f *ChildFetch) records(child *Entity, parent string, rows []json.RawMessage, zone *time.Location) ([]Incoming, error) {
	var out []Incoming
	var whole []map[string]json.RawMessage
	for _, row := range rows {
		fields, err := FieldsOf(row)
		if err != nil {
			return nil, fmt.Errorf("%s of %s %s: %w", child.Name, child.Parent, parent, err)
		}
		k := Text(fields, f.KeyField)
		if k == "" {
			return nil, fmt.Errorf("%s of %s %s: row without %s: %.200s", child.Name, child.Parent, parent, f.KeyField, row)
		}
		if f.Clean != nil {
			f.Clean(fields)
			row = MustJSON(fields)
		}
		if f.Whole {
			whole = append(whole, fields)
			continue
		}
		in, err := NewIncoming(child, parent+":"+k, parent, row, fields, zone)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	if !f.Whole || len(whole) == 0 {
		return out, nil
	}
	slices.SortFunc(whole, func(a, b map[string]json.RawMessage) int { // the portal's order varies
		return rest.CompareIDs(Text(a, f.KeyField), Text(b, f.KeyField))
	})
	payload := MustJSON(map[string]any{"items": whole})
	fields, _ := FieldsOf(payload)
	in, err := NewIncoming(child, parent, parent, payload, fields, zone)
	return append(out, in), err
}
