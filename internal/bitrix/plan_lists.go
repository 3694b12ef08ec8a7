package bitrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	if _, refused := errors.AsType[*rest.APIError](err); refused {
		// The webhook may not list workgroups (no sonet scope): get will find no workgroup
		// chats either, groups being unread.
		e.Log().Warn("plan: the workgroups cannot be listed: their chats are not counted", "error", err)
		return nil, false, nil
	}
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

// taskChatSamples is how many pages of tasks planTaskChats reads, spread over the portal's
// tasks: the new card came late, so the newest tasks alone would overstate its share.
const taskChatSamples = 10

// planTaskChats is how many of the portal's tasks have a chat (the new card), before tasks are
// read: the share of a sample that names a chatId (pages of tasks.task.list, read as get reads
// them, at offsets spread over the tasks, in one batch), applied to the portal's count of tasks.
// A list that leaves chatId out (some portals; get then asks tasks.task.get) shows none.
func planTaskChats(ctx context.Context, e engine.Env, tasks int64) (int64, error) {
	scan, ok := e.Entity(Tasks).Lister.(*engine.IDScan)
	if !ok || tasks <= 0 {
		return 0, nil
	}
	pages := min(int64(taskChatSamples), (tasks+rest.PageSize-1)/rest.PageSize)
	var cmds []rest.Command
	for i := range pages {
		params := map[string]any{}
		maps.Copy(params, scan.Scan.Params)
		maps.Copy(params, scan.Scan.Order)
		params["start"] = tasks * i / pages / rest.PageSize * rest.PageSize
		cmds = append(cmds, rest.Command{Key: fmt.Sprintf("s%d", i), Method: scan.Scan.Method, Params: params})
	}
	seen, with := 0, 0
	err := e.BatchEach(ctx, cmds, func(_ string, r *rest.Response) error {
		rows, err := r.Rows(scan.Scan.RowsPath...)
		if err != nil {
			return err
		}
		for _, row := range rows {
			var t struct {
				ChatID rest.ID `json:"chatId"`
			}
			if err := json.Unmarshal(row, &t); err != nil {
				return err
			}
			seen++
			if !engine.None(string(t.ChatID)) {
				with++
			}
		}
		return nil
	}, func(key string, err error) error {
		return fmt.Errorf("plan: sample the tasks' chats (%s): %w", key, err)
	})
	if err != nil || seen == 0 {
		return 0, err
	}
	return (tasks*int64(with) + int64(seen)/2) / int64(seen), nil
}
