package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// funnelWalker reads the funnels of every CRM type (crm.category.list per entityTypeId:
// companies, contacts, deals and every smart process type read by crm_types) and the stages of
// each funnel (crm.status.list by the funnel's ENTITY_ID: DEAL_STAGE, DEAL_STAGE_<id>,
// DYNAMIC_<entityTypeId>_STAGE_<id>), a batch of calls each, and stores them in one
// transaction: a portal has tens of funnels, not thousands, so the pass is never cut in pieces.
type funnelWalker struct{}

// funnelTypes are the types whose funnels are read: the built-in ones with funnels, then every
// smart process type stored by crm_types.
func funnelTypes(ctx context.Context, e engine.Env) ([]int, error) {
	types := []int{crmCompany, crmContact, crmDeal}
	smart, err := smartTypeIDs(ctx, e)
	return append(types, smart...), err
}

// smartTypeIDs are the entityTypeIds of the smart process types crm_types read, ascending.
func smartTypeIDs(ctx context.Context, e engine.Env) ([]int, error) {
	ids, err := e.Store().SourceIDs(ctx, CRMTypes)
	if err != nil {
		return nil, fmt.Errorf("list smart process types: %w", err)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		if out[i], err = strconv.Atoi(strings.TrimSpace(id)); err != nil {
			return nil, fmt.Errorf("list smart process types: %s %q: the id is not a number: %w", CRMTypes, id, err)
		}
	}
	slices.Sort(out)
	return out, nil
}

// funnel is one category as crm.category.list returned it.
type funnel struct {
	entityTypeID int
	row          json.RawMessage
	fields       map[string]json.RawMessage
}

// readFunnels lists the funnels of the types, one command each (and more for a type with more
// than 50). A type the portal answers NOT_FOUND or ENTITY_TYPE_NOT_SUPPORTED for has no funnels.
func readFunnels(ctx context.Context, e engine.Env, types []int) ([]funnel, *rest.Response, error) {
	var out []funnel
	var first *rest.Response
	cmds := make([]rest.Command, 0, len(types))
	for _, et := range types {
		cmds = append(cmds, categoryCommand(et, 0))
	}
	for len(cmds) > 0 {
		var more []rest.Command
		err := e.BatchEach(ctx, cmds, func(key string, r *rest.Response) error {
			et, start := parseCategoryKey(key)
			if first == nil {
				first = r
			}
			rows, err := r.Rows("categories")
			if err != nil {
				return fmt.Errorf("funnels of type %d: %w", et, err)
			}
			for _, row := range rows {
				fields, err := engine.FieldsOf(row)
				if err != nil {
					return fmt.Errorf("funnels of type %d: %w", et, err)
				}
				if engine.Text(fields, "id") == "" {
					return fmt.Errorf("funnels of type %d: row without id: %.200s", et, row)
				}
				out = append(out, funnel{et, row, fields})
			}
			if r.Next != nil && *r.Next > start && len(rows) > 0 {
				more = append(more, categoryCommand(et, *r.Next))
			}
			return nil
		}, func(key string, err error) error {
			et, _ := parseCategoryKey(key)
			if rest.HasCode(err, "NOT_FOUND") || rest.HasCode(err, "ENTITY_TYPE_NOT_SUPPORTED") {
				e.Log().Warn("the portal has no funnels for this CRM type", "entity_type_id", et, "error", err)
				return nil
			}
			return fmt.Errorf("funnels of type %d: %w", et, err)
		})
		if err != nil {
			return nil, nil, err
		}
		cmds = more
	}
	return out, first, nil
}

func categoryCommand(et, start int) rest.Command {
	return rest.Command{Key: fmt.Sprintf("t%d_%d", et, start), Method: "crm.category.list",
		Params: map[string]any{"entityTypeId": et, "start": start}}
}

func parseCategoryKey(key string) (et, start int) {
	_, _ = fmt.Sscanf(key, "t%d_%d", &et, &start)
	return et, start
}

// stageEntityID is the crm.status.list ENTITY_ID of a funnel's stages; "" for types whose items
// have no stages (companies, contacts).
func stageEntityID(et int, category string) string {
	switch {
	case et == crmDeal && category == "0":
		return "DEAL_STAGE"
	case et == crmDeal:
		return "DEAL_STAGE_" + category
	case isSmartType(strconv.Itoa(et)):
		return fmt.Sprintf("DYNAMIC_%d_STAGE_%s", et, category)
	}
	return ""
}

// readStages lists the stages of the funnels that have them, one command per funnel (paged past
// 50), and returns them as children of their funnel's record.
func readStages(ctx context.Context, e engine.Env, funnels []funnel, stages *engine.Entity, zone *time.Location) ([]engine.Incoming, error) {
	type ask struct {
		parent, entityID string
	}
	var asks []ask
	var cmds []rest.Command
	for _, f := range funnels {
		cat := engine.Text(f.fields, "id")
		entityID := stageEntityID(f.entityTypeID, cat)
		if entityID == "" {
			continue
		}
		cmds = append(cmds, stageCommand(len(asks), entityID, 0))
		asks = append(asks, ask{strconv.Itoa(f.entityTypeID) + ":" + cat, entityID})
	}
	var out []engine.Incoming
	for len(cmds) > 0 {
		var more []rest.Command
		err := e.BatchEach(ctx, cmds, func(key string, r *rest.Response) error {
			var i, start int
			_, _ = fmt.Sscanf(key, "s%d_%d", &i, &start)
			a := asks[i]
			rows, err := r.Rows()
			if err != nil {
				return fmt.Errorf("stages of %s: %w", a.entityID, err)
			}
			for _, row := range rows {
				fields, err := engine.FieldsOf(row)
				if err != nil {
					return fmt.Errorf("stages of %s: %w", a.entityID, err)
				}
				id := engine.Text(fields, "STATUS_ID")
				if id == "" {
					return fmt.Errorf("stages of %s: row without STATUS_ID: %.200s", a.entityID, row)
				}
				in, err := engine.NewIncoming(stages, id, a.parent, row, fields, zone)
				if err != nil {
					return err
				}
				out = append(out, in)
			}
			if r.Next != nil && *r.Next > start && len(rows) > 0 {
				more = append(more, stageCommand(i, a.entityID, *r.Next))
			}
			return nil
		}, func(key string, err error) error {
			var i int
			_, _ = fmt.Sscanf(key, "s%d_", &i)
			return fmt.Errorf("stages of %s: %w", asks[i].entityID, err)
		})
		if err != nil {
			return nil, err
		}
		cmds = more
	}
	return out, nil
}

func stageCommand(i int, entityID string, start int) rest.Command {
	return rest.Command{Key: fmt.Sprintf("s%d_%d", i, start), Method: "crm.status.list", Params: map[string]any{
		"filter": map[string]any{"ENTITY_ID": entityID}, "order": map[string]any{"SORT": "ASC"}, "start": start}}
}

func (funnelWalker) Get(ctx context.Context, g *engine.GetRun) error {
	e, ent := g.Env, g.Ent
	stages := e.Entity(CRMStages)
	types, err := funnelTypes(ctx, e)
	if err != nil {
		return err
	}
	funnels, first, err := readFunnels(ctx, e, types)
	if err != nil {
		return err
	}
	zone, err := e.Zone(first)
	if err != nil {
		return err
	}
	if zone == nil {
		zone = time.UTC // nothing was read: no date to read either
	}
	var cats []engine.Incoming
	for _, f := range funnels {
		in, err := engine.NewIncoming(ent, strconv.Itoa(f.entityTypeID)+":"+engine.Text(f.fields, "id"), "", f.row, f.fields, zone)
		if err != nil {
			return err
		}
		cats = append(cats, in)
	}
	kids, err := readStages(ctx, e, funnels, stages, zone)
	if err != nil {
		return err
	}
	var saved engine.PageResult
	err = e.Store().Tx(ctx, func(tx engine.Store) error {
		page := engine.Page{Records: []engine.EntityRecords{{Ent: ent, Recs: cats}, {Ent: stages, Recs: kids}}}
		for _, name := range []string{ent.Name, stages.Name} {
			if _, err := tx.Inventory(ctx, name); err != nil { // startPass moves an existing row
				return err
			}
			inv, err := tx.StartPass(ctx, name, 0)
			if err != nil {
				return err
			}
			g.Stats.Pass = inv.Pass
		}
		for _, r := range page.Records {
			total := int64(len(r.Recs))
			page.Log = append(page.Log, engine.PageLog{Entity: r.Ent.Name, Pages: []engine.PageRecord{{Pass: g.Stats.Pass,
				Cursor: "0", Next: "0", Count: len(r.Recs), Total: &total, Last: true}}})
		}
		var err error
		saved, err = e.SavePage(ctx, tx, page)
		return err
	})
	if err != nil {
		return err
	}
	saved.AddCounts(g.Stats)
	g.Stats.Pages, g.Stats.Complete = 1, true
	for _, r := range []engine.EntityRecords{{Ent: ent, Recs: cats}, {Ent: stages, Recs: kids}} {
		total := int64(len(r.Recs)) // every funnel and stage read, as Total and verifyStages count them
		if err := e.NoteListed(ctx, r.Ent.Name, &total, false); err != nil {
			return err
		}
	}
	e.Log().Info("funnels and stages read", "types", len(types), "funnels", len(cats), "stages", len(kids))
	return nil
}

// NoDelta makes the funnels a FullPassLister: crm.category.list and crm.status.list send no
// modification time, and a portal has tens of funnels, read in a batch or two.
func (funnelWalker) NoDelta() string {
	return "crm.category.list and crm.status.list have no modification time; every funnel and stage is read, a batch of each"
}

// Total counts the funnels the portal has now (one batch of crm.category.list).
func (funnelWalker) Total(ctx context.Context, e engine.Env, _ *engine.Entity) (int64, error) {
	types, err := funnelTypes(ctx, e)
	if err != nil {
		return 0, err
	}
	funnels, _, err := readFunnels(ctx, e, types)
	return int64(len(funnels)), err
}

// Plan reads the funnels of the built-in types and of every smart-process type (those crm_types
// read or, before it did, the portal's: planSmartTypeIDs) as get reads them, and counts a call
// per 50 funnels with stages; verify in the same run takes the counts get read (NoteListed).
func (w funnelWalker) Plan(ctx context.Context, e engine.Env, ent *engine.Entity) ([]engine.EntityPlan, error) {
	smart, fromPortal, err := planSmartTypeIDs(ctx, e)
	if err != nil {
		return nil, err
	}
	types := append([]int{crmCompany, crmContact, crmDeal}, smart...)
	funnels, _, err := readFunnels(ctx, e, types)
	if err != nil {
		return nil, err
	}
	staged := 0
	for _, f := range funnels {
		if stageEntityID(f.entityTypeID, engine.Text(f.fields, "id")) != "" {
			staged++
		}
	}
	how := "crm.category.list per type, read as get reads them"
	if fromPortal {
		how += fmt.Sprintf(" (the %d smart process types listed by crm.type.list: crm_types not read yet)", len(smart))
	}
	perType, perStaged := engine.CeilDiv(int64(len(types)), rest.MaxBatch), engine.CeilDiv(int64(staged), rest.MaxBatch)
	calls, stageCalls, stagesHow := perType, perStaged, "crm.status.list per funnel with stages, 50 funnels to a call; no count before they are read"
	if a := e.PlanAhead(); a != nil { // a rerun's prefetch asks both (Prefetch)
		a.Ask(1, false, len(types))
		a.Ask(2, true, staged)
		calls, stageCalls = 0, 0
		how += "; a rerun's prefetch asks them"
		stagesHow += "; a rerun's prefetch asks them"
	}
	return []engine.EntityPlan{
		// Verify takes the funnels and stages that get counted in the same run: no call of its own.
		{Entity: ent.Name, Records: int64(len(funnels)), Calls: calls, How: how},
		{Entity: CRMStages, Records: -1, Calls: stageCalls, How: stagesHow},
	}, nil
}

// verifyStages is crm_categories' own part of verify: the stages, read with their funnels,
// compared with the target and listed when not imported.
func verifyStages(ctx context.Context, e engine.Env, _ *engine.Entity, r *engine.VerifyReport) error {
	stages := e.Entity(CRMStages)
	if n, ok, err := e.ListedCount(ctx, stages.Name); err != nil || ok { // read whole by this run's get
		if err != nil {
			return err
		}
		return e.ChildCounts(ctx, stages, n, r)
	}
	types, err := funnelTypes(ctx, e)
	if err != nil {
		return err
	}
	funnels, _, err := readFunnels(ctx, e, types)
	if err != nil {
		return err
	}
	kids, err := readStages(ctx, e, funnels, stages, time.UTC)
	if err != nil {
		return err
	}
	return e.ChildCounts(ctx, stages, int64(len(kids)), r)
}

// Prefetch makes the funnels an engine.Prefetcher: a rerun asks up front the first page of every
// type's funnels (round 1) and, from their answers, the first page of every funnel's stages
// (round 2), built by the commands Get sends.
func (funnelWalker) Prefetch(ctx context.Context, e engine.Env, _ *engine.Entity, ahead *engine.Ahead) ([]rest.Command, error) {
	if ahead.Round > 2 {
		return nil, nil
	}
	types, err := funnelTypes(ctx, e)
	if err != nil {
		return nil, err
	}
	var out []rest.Command
	for _, et := range types {
		cat := categoryCommand(et, 0)
		if ahead.Round == 1 {
			out = append(out, cat)
			continue
		}
		r, ok := ahead.Answer(cat)
		if !ok {
			continue
		}
		rows, err := r.Rows("categories")
		if err != nil {
			continue // Get reports it
		}
		for _, row := range rows {
			fields, err := engine.FieldsOf(row)
			if err != nil {
				continue
			}
			if entityID := stageEntityID(et, engine.Text(fields, "id")); entityID != "" {
				ahead.Anytime(stageCommand(0, entityID, 0))
			}
		}
	}
	return out, nil
}
