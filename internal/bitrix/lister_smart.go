package bitrix

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// smartItems reads the items of every smart process type crm_types read, type after type, each
// with an ID scan of its own (IDScan with a Scope: its inventory, ID ranges and page log are kept
// under smart_<entityTypeId>, so an interrupted get resumes the type where its ranges stopped).
// The smart entity's own inventory keeps the pass: its cursor is the last type read whole, its
// rows and total the sum of the types'.
type smartItems struct{}

// smartScan is the ID scan of one smart process type.
func smartScan(et int) *IDScan {
	return &IDScan{Scan: crmScan(et), CountParams: map[string]any{"select": []string{"id"}},
		Scope: fmt.Sprintf("%s_%d", Smart, et), IDPrefix: strconv.Itoa(et) + ":", Fill: map[string]any{"entityTypeId": et}}
}

func (smartItems) get(ctx context.Context, g *getRun) error {
	e, ent := g.e, g.ent
	types, err := smartTypeIDs(ctx, e)
	if err != nil {
		return err
	}
	inv, err := loadInventory(ctx, e.Pool, ent.Name)
	if err != nil {
		return err
	}
	g.st.Resumed = inv.Pass > 0 && !inv.Complete
	after := 0
	if g.st.Resumed {
		after, _ = strconv.Atoi(inv.Cursor)
	} else if inv, err = startPass(ctx, e.Pool, ent.Name, e.TestLimit); err != nil {
		return err
	}
	g.st.Pass, g.st.Cursor = inv.Pass, inv.Cursor
	var scopes []string
	for _, et := range types {
		s := smartScan(et)
		scopes = append(scopes, s.Scope)
		if et <= after {
			continue
		}
		st := GetStats{Counts: g.st.Counts}
		err := s.get(ctx, &getRun{e: e, ent: ent, st: &st, start: g.start})
		switch {
		case rest.HasCode(err, "NOT_FOUND"):
			// Deleted since crm_types read it: its items went with it.
			e.Log.Warn("smart process type gone from the portal: it has no items to read; run `ingest bitrix crm_types run` again",
				"entity_type_id", et, "error", err)
		case err != nil && !errors.Is(err, errLimitReached):
			return fmt.Errorf("smart process %d: %w", et, err)
		}
		g.st.Pages += st.Pages
		if _, err := e.Pool.Exec(ctx, `UPDATE bitrix_inventory SET get_cursor = $2,
pass_rows = (SELECT coalesce(sum(pass_rows), 0) FROM bitrix_inventory WHERE entity = ANY($3)),
source_total = (SELECT sum(source_total) FROM bitrix_inventory WHERE entity = ANY($3)), updated_at = now()
WHERE entity = $1`, ent.Name, strconv.Itoa(et), scopes); err != nil {
			return fmt.Errorf("advance get of %s past type %d: %w", ent.Name, et, err)
		}
	}
	if _, err := e.Pool.Exec(ctx, `UPDATE bitrix_inventory SET get_complete = true, get_finished_at = now(),
source_total = coalesce(source_total, 0), updated_at = now() WHERE entity = $1`, ent.Name); err != nil {
		return fmt.Errorf("finish get of %s: %w", ent.Name, err)
	}
	g.st.Complete = true
	e.Log.Info("smart process items read", "types", len(types))
	return nil
}

// counts asks the portal how many items each type holds, in one batch (a one-row count each).
func (smartItems) counts(ctx context.Context, e *Engine) (map[int]int64, error) {
	types, err := smartTypeIDs(ctx, e)
	if err != nil {
		return nil, err
	}
	out := map[int]int64{}
	cmds := make([]rest.Command, len(types))
	for i, et := range types {
		cmds[i] = rest.Command{Key: "t" + strconv.Itoa(et), Method: "crm.item.list",
			Params: map[string]any{"entityTypeId": et, "select": []string{"id"}, "start": 0}}
	}
	err = e.batchEach(ctx, cmds, func(key string, r *rest.Response) error {
		et, _ := strconv.Atoi(key[1:])
		if r.Total == nil {
			return fmt.Errorf("count smart process %d: crm.item.list reported no total", et)
		}
		out[et] = int64(*r.Total)
		return nil
	}, func(key string, err error) error {
		if rest.HasCode(err, "NOT_FOUND") { // deleted since crm_types read it: no items
			return nil
		}
		return fmt.Errorf("count smart process %s: %w", key[1:], err)
	})
	return out, err
}

func (s smartItems) total(ctx context.Context, e *Engine, _ *Entity) (int64, error) {
	counts, err := s.counts(ctx, e)
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, err
}

func (s smartItems) plan(ctx context.Context, e *Engine, ent *Entity) ([]EntityPlan, error) {
	counts, err := s.counts(ctx, e)
	if err != nil {
		return nil, err
	}
	p := EntityPlan{Entity: ent.Name, How: "crm.item.list count per type (one batch); get reads each type in ID ranges, 2,500 rows per call"}
	for _, n := range counts {
		p.Records += n
		p.Calls += idScanCalls(n)
	}
	if len(counts) == 0 {
		p.How = "no smart process types read yet (run `ingest bitrix crm_types get` first)"
	}
	return []EntityPlan{p}, nil
}
