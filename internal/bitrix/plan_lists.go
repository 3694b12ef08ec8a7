package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The plan before a first migration cannot take the keys of what hangs off workgroups and
// smart-process types from the database, where get would: nothing is read yet. These read the
// lists themselves (a few calls, which the plan counts as its own asking), so that the plan
// counts what hangs off them as get will.

// planGroupIDs are the workgroups get will ask the chats of: those read, or, before groups are
// read, the portal's, listed as the groups' get lists them (50 to a page, pages batched).
func planGroupIDs(ctx context.Context, e engine.Env) (ids []string, fromPortal bool, err error) {
	if ids, err = e.Store().SourceIDs(ctx, Groups); err != nil || len(ids) > 0 {
		return ids, false, err
	}
	scan, ok := e.Entity(Groups).Lister.(*engine.IDScan)
	if !ok {
		return nil, false, fmt.Errorf("plan: the workgroups are not listed by an ID scan")
	}
	list := rest.List{Method: scan.Scan.Method, Params: scan.Scan.Params, RowsPath: scan.Scan.RowsPath}
	err = e.Source().ListByStart(ctx, list, 0, func(p rest.Page) error {
		for _, row := range p.Rows {
			var g struct {
				ID rest.ID `json:"ID"`
			}
			if err := json.Unmarshal(row, &g); err != nil {
				return fmt.Errorf("plan: %s: %w", scan.Scan.Method, err)
			}
			ids = append(ids, string(g.ID))
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("plan: list the workgroups: %w", err)
	}
	return ids, true, nil
}

// planSmartTypeIDs are the smart-process types get will read the items and funnels of: those
// crm_types read, or, before it did, the portal's (crm.type.list, as crm_types lists them).
func planSmartTypeIDs(ctx context.Context, e engine.Env) (types []int, fromPortal bool, err error) {
	if types, err = smartTypeIDs(ctx, e); err != nil || len(types) > 0 {
		return types, false, err
	}
	if read, err := e.Store().SourceIDs(ctx, CRMTypes); err != nil || len(read) > 0 {
		return nil, false, err // read, and none: the portal has none
	}
	lister, ok := e.Entity(CRMTypes).Lister.(*engine.OffsetPages)
	if !ok {
		return nil, false, fmt.Errorf("plan: the smart-process types are not listed by offset")
	}
	err = e.Source().ListByStart(ctx, lister.List, 0, func(p rest.Page) error {
		for _, row := range p.Rows {
			var t struct {
				EntityTypeID rest.ID `json:"entityTypeId"`
			}
			if err := json.Unmarshal(row, &t); err != nil {
				return fmt.Errorf("plan: crm.type.list: %w", err)
			}
			et, err := strconv.Atoi(string(t.EntityTypeID))
			if err != nil {
				return fmt.Errorf("plan: crm.type.list: entityTypeId %q: %w", t.EntityTypeID, err)
			}
			types = append(types, et)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("plan: list the smart-process types: %w", err)
	}
	slices.Sort(types)
	return slices.Compact(types), true, nil
}

// planTaskChats is how many of the portal's tasks have a chat (the new card), before tasks are
// read: the share of the first page of tasks.task.list (read as get reads it) that names a
// chatId, applied to the portal's count of tasks. A list that leaves chatId out (some portals;
// get then asks tasks.task.get) shows none.
func planTaskChats(ctx context.Context, e engine.Env, tasks int64) (int64, error) {
	scan, ok := e.Entity(Tasks).Lister.(*engine.IDScan)
	if !ok || tasks <= 0 {
		return 0, nil
	}
	params := map[string]any{"start": 0}
	for k, v := range scan.Scan.Params {
		params[k] = v
	}
	resp, err := e.Source().Call(ctx, scan.Scan.Method, params)
	if err != nil {
		return 0, fmt.Errorf("plan: sample the tasks' chats: %w", err)
	}
	rows, err := resp.Rows(scan.Scan.RowsPath...)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	with := 0
	for _, row := range rows {
		var t struct {
			ChatID rest.ID `json:"chatId"`
		}
		if err := json.Unmarshal(row, &t); err != nil {
			return 0, fmt.Errorf("plan: sample the tasks' chats: %w", err)
		}
		if !engine.None(string(t.ChatID)) {
			with++
		}
	}
	return (tasks*int64(with) + int64(len(rows))/2) / int64(len(rows)), nil
}
