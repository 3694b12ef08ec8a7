package bitrix

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// smartItems reads the items of every smart process type crm_types read, type after type, each
// with an ID scan of its own (IDScan with a Scope: its inventory, ID ranges and page log are kept
// under smart_<entityTypeId>, so an interrupted get resumes the type where its ranges stopped).
// The smart entity's own inventory keeps the pass: its cursor is the last type read whole, its
// rows and total the sum of the types'.
type smartItems struct{}

// smartScan is the ID scan of one smart process type.
func smartScan(et int) *engine.IDScan {
	return &engine.IDScan{Scan: crmScan(et), CountParams: map[string]any{"select": []string{"id"}},
		Scope: fmt.Sprintf("%s_%d", Smart, et), IDPrefix: strconv.Itoa(et) + ":", Fill: map[string]any{"entityTypeId": et},
		Modified: crmModified}
}

func (smartItems) Get(ctx context.Context, g *engine.GetRun) error {
	e, ent := g.Env, g.Ent
	types, err := smartTypeIDs(ctx, e)
	if err != nil {
		return err
	}
	inv, err := g.ResumeOrStart(ctx)
	if err != nil {
		return err
	}
	after := 0
	if g.Stats.Resumed {
		after, _ = strconv.Atoi(inv.Cursor)
	}
	g.Stats.Pass, g.Stats.Cursor = inv.Pass, inv.Cursor
	var scopes []string
	for _, et := range types {
		s := smartScan(et)
		scopes = append(scopes, s.Scope)
		if et <= after {
			continue
		}
		st := engine.GetStats{Counts: g.Stats.Counts}
		err := s.Get(ctx, &engine.GetRun{Env: e, Ent: ent, Stats: &st, Start: g.Start})
		switch {
		case rest.HasCode(err, "NOT_FOUND"):
			// Deleted since crm_types read it: its items went with it.
			e.Log().Warn("smart process type gone from the portal: it has no items to read; run `ingest bitrix crm_types run` again",
				"entity_type_id", et, "error", err)
		case err != nil && !errors.Is(err, engine.ErrLimitReached):
			return fmt.Errorf("smart process %d: %w", et, err)
		}
		g.Stats.Pages += st.Pages
		if err := e.Store().RollUp(ctx, engine.RollUpParams{Entity: ent.Name, Cursor: strconv.Itoa(et), Parts: scopes}); err != nil {
			return fmt.Errorf("smart process %d: %w", et, err)
		}
	}
	if err := markSmartPass(ctx, e, ent.Name, scopes); err != nil {
		return err
	}
	if err := e.Store().RollUp(ctx, engine.RollUpParams{Entity: ent.Name, Complete: true}); err != nil {
		return err
	}
	g.Stats.Complete = true
	e.Log().Info("smart process items read", "types", len(types))
	return nil
}

// markSmartPass records the smart entity's pass as delta when a type's pass was one (each type
// decides its own, pass.go): the entity's pass then did not see every item, and concludes no
// deletions from what it did not see.
func markSmartPass(ctx context.Context, e engine.Env, entity string, scopes []string) error {
	delta := 0
	for _, scope := range scopes {
		inv, err := e.Store().Inventory(ctx, scope)
		if err != nil {
			return err
		}
		if inv.Kind == engine.PassDelta {
			delta++
		}
	}
	d := engine.PassDecision{Kind: engine.PassFull, Reason: "every smart process type read in full"}
	if delta > 0 {
		d = engine.PassDecision{Kind: engine.PassDelta, Reason: fmt.Sprintf("%d of %d smart process types read only what changed", delta, len(scopes))}
	}
	return e.Store().MarkPass(ctx, entity, d)
}

// counts asks the portal how many items each type holds, in one batch (a one-row count each).
func (smartItems) counts(ctx context.Context, e engine.Env) (map[int]int64, error) {
	types, err := smartTypeIDs(ctx, e)
	if err != nil {
		return nil, err
	}
	return countSmart(ctx, e, types)
}

// countSmart asks the portal how many items each of types holds, in one batch.
func countSmart(ctx context.Context, e engine.Env, types []int) (map[int]int64, error) {
	out := map[int]int64{}
	var contradicted []string
	cmds := make([]rest.Command, len(types))
	for i, et := range types {
		cmds[i] = rest.Command{Key: "t" + strconv.Itoa(et), Method: "crm.item.list",
			Params: map[string]any{"entityTypeId": et, "select": []string{"id"}, "start": 0}}
	}
	err := e.BatchEach(ctx, cmds, func(key string, r *rest.Response) error {
		et, _ := strconv.Atoi(key[1:])
		if r.Total == nil {
			return fmt.Errorf("count smart process %d: crm.item.list reported no total", et)
		}
		rows, _ := r.Rows("items")
		t, grand := r.GrandTotal(len(rows))
		if !grand { // the page's size, not a count: an estimate at best
			contradicted = append(contradicted, strconv.Itoa(et))
			t = max(t, len(rows))
		}
		out[et] = int64(t)
		return nil
	}, func(key string, err error) error {
		if rest.HasCode(err, "NOT_FOUND") { // deleted since crm_types read it: no items
			return nil
		}
		return fmt.Errorf("count smart process %s: %w", key[1:], err)
	})
	if err == nil && len(contradicted) > 0 {
		err = fmt.Errorf("count smart processes %s: crm.item.list reported totals its own pages contradict: %w",
			strings.Join(contradicted, ", "), engine.ErrNoTotal)
	}
	return out, err
}

func (s smartItems) Total(ctx context.Context, e engine.Env, _ *engine.Entity) (int64, error) {
	counts, err := s.counts(ctx, e)
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, err
}

// Plan counts the items of every type (one batch), the types being those crm_types read or,
// before it did, the portal's (planSmartTypeIDs); verify in the same run adds up the counts
// each type's pass read.
func (s smartItems) Plan(ctx context.Context, e engine.Env, ent *engine.Entity) ([]engine.EntityPlan, error) {
	types, fromPortal, err := planSmartTypeIDs(ctx, e)
	if err != nil {
		return nil, err
	}
	counts, err := countSmart(ctx, e, types)
	if err != nil && !errors.Is(err, engine.ErrNoTotal) { // an estimate is enough for a plan
		return nil, err
	}
	p := engine.EntityPlan{Entity: ent.Name, // verify adds up the counts each type's pass read
		How: "crm.item.list count per type (one batch); get reads each type in ID ranges, 2,500 rows per call"}
	var scopes []string
	var passes []engine.PassDecision
	for _, et := range types {
		n := counts[et]
		p.Records += n
		scan := smartScan(et)
		pass, err := scan.PlanPass(ctx, e, ent, n)
		if err != nil {
			return nil, err
		}
		scopes, passes = append(scopes, scan.Scope), append(passes, pass.Decision)
		p.Calls -= pass.Ahead // answered by a rerun's prefetch
		if pass.Decision.Delta() {
			p.Calls += pass.Calls
			p.Changed += pass.Changed
			continue
		}
		p.Calls += engine.IDScanCalls(n)
	}
	p.Pass, p.PassReason = engine.PassSummary(scopes, passes)
	if p.Pass == engine.PassDelta && len(types) > 0 {
		p.VerifyCalls = 0 // verify in the same run adds up the scans' ID-range counts (sourceTotal)
	}
	if p.Changed > 0 {
		p.How += fmt.Sprintf("; the delta passes read %d changed items", p.Changed)
	}
	switch {
	case len(types) == 0:
		p.How = "the portal has no smart process types"
	case fromPortal:
		p.How += fmt.Sprintf("; the %d types listed by crm.type.list (crm_types not read yet)", len(types))
	}
	return []engine.EntityPlan{p}, nil
}
