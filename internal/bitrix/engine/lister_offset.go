package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// OffsetPages lists an entity by offset (start=0, 50, 100...; up to 50 pages to a batch), for
// methods that cannot be filtered by an ID range.
// The inventory's cursor is the offset of the next page, so an interrupted get resumes there.
// Give List.Params an order by ID ascending: records created during the pass then land at the
// end instead of shifting the pages. A record deleted before the cursor during a pass still
// shifts the rest by one, so one record may be missed until the next pass; verify's count
// comparison says so.
type OffsetPages struct {
	List rest.List
	// ByID, when set, builds the method's parameters asking for one record by its id
	// (log.blogpost.get's POST_ID): the deletion pass then confirms each record a complete pass
	// did not see (lister_offset_gone.go). Without it the lister concludes no deletion.
	ByID func(id string) map[string]any
	// Unfiltered says why the method cannot be read by modification time (NoDelta): the
	// reason every pass of the entity is full.
	Unfiltered string
}

func (o *OffsetPages) Get(ctx context.Context, g *GetRun) error {
	e, ent := g.Env.e, g.Ent
	inv, err := g.ResumeOrStart(ctx)
	if err != nil {
		return err
	}
	if !g.Stats.Resumed {
		inv.Cursor = "0"
	}
	start, err := strconv.Atoi(inv.Cursor)
	if err != nil {
		return fmt.Errorf("%s: the inventory's cursor %q is not an offset", ent.Name, inv.Cursor)
	}
	g.Stats.Pass, g.Stats.Cursor = inv.Pass, inv.Cursor
	e.log.Info("get started", "entity", ent.Name, "pass", inv.Pass, "resumed", g.Stats.Resumed, "offset", start)
	// The first page comes alone: its answer says how many rows there are and, through its
	// clock, the portal's time zone.
	resp, err := e.source.Call(ctx, o.List.Method, o.params(start))
	if err != nil {
		return fmt.Errorf("list %s from %d: %w", o.List.Method, start, err)
	}
	zone, err := e.zoneOf(resp)
	if err != nil {
		return fmt.Errorf("get %s: %w", ent.Name, err)
	}
	p := &offsetPages{g: g, zone: zone, pass: inv.Pass, before: inv.PassRows}
	rows, err := resp.Rows(o.List.RowsPath...)
	if err != nil {
		return fmt.Errorf("list %s from %d: %w", o.List.Method, start, err)
	}
	next, last := start+len(rows), resp.Next == nil || len(rows) == 0
	if resp.Next != nil {
		next = *resp.Next
	}
	if t, ok := resp.GrandTotal(len(rows)); ok { // progress and the page log only: a listing ends without next
		t := int64(t)
		p.total = &t
	}
	if err := p.store(ctx, rows, start, next, last); err != nil || last {
		if err == nil { // the first page's total: verify's count
			err = e.noteListed(ctx, ent.Name, p.total, g.Stats.Resumed)
		}
		return err
	}
	err = e.source.ListByStart(ctx, o.List, next, func(page rest.Page) error {
		from, _ := strconv.Atoi(page.Cursor)
		to, _ := strconv.Atoi(page.Next)
		return p.store(ctx, page.Rows, from, to, page.Last)
	})
	if err != nil {
		return err
	}
	return e.noteListed(ctx, ent.Name, p.total, g.Stats.Resumed) // the first page's total: verify's count
}

func (o *OffsetPages) params(start int) map[string]any { return o.List.PageParams(start) }

func (o *OffsetPages) Total(ctx context.Context, env Env, ent *Entity) (int64, error) {
	e := env.e
	resp, err := e.source.Call(ctx, o.List.Method, o.params(0))
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", ent.Name, err)
	}
	if resp.Total == nil {
		return 0, fmt.Errorf("count %s: %s reported no total", ent.Name, o.List.Method)
	}
	return countOf(ent, o.List.Method, resp, o.List.RowsPath)
}

// countOf reads the portal's count of an entity from the first page of its listing. A total the
// answer contradicts (a next page at or past it: the page's own size, not a count of every row)
// is returned as the estimate it is, with an error wrapping ErrNoTotal: verify then does not
// compare it, and plan takes it for an estimate.
func countOf(ent *Entity, method string, resp *rest.Response, rowsPath []string) (int64, error) {
	rows := -1
	if list, err := resp.Rows(rowsPath...); err == nil {
		rows = len(list)
	}
	t, ok := resp.GrandTotal(rows)
	if !ok {
		n := int64(max(t, rows))
		if resp.Next != nil {
			n = max(n, int64(*resp.Next)+1)
		}
		return n, fmt.Errorf("count %s: %s reported a total of %d that its own page contradicts: %w", ent.Name, method, t, ErrNoTotal)
	}
	return int64(t), nil
}

// estimated is Total's answer for plans: a contradicted count (countOf) is still an estimate.
func estimated(n int64, err error) (int64, error) {
	if errors.Is(err, ErrNoTotal) && n > 0 {
		return n, nil
	}
	return n, err
}

// Plan is the count, then one call for the first page and the rest 50 pages to a call: an
// offset listing's cost is known from the count alone.
func (o *OffsetPages) Plan(ctx context.Context, env Env, ent *Entity) ([]EntityPlan, error) {
	e := env.e
	n, err := estimated(o.Total(ctx, e.env(), ent))
	if err != nil {
		return nil, err
	}
	pages := max(CeilDiv(n, rest.PageSize), 1)
	calls := 1
	if pages > 1 {
		calls += 1 + CeilDiv(int64(pages-2), rest.MaxBatch) // ListByStart's single first call, then batches
	}
	how := o.List.Method + " count; get reads pages by offset, 50 to a call"
	if a := e.planAhead; a != nil { // the first page, asked up front (Prefetch)
		a.Ask(1, true, 1)
		calls--
		how += "; the first page asked by the rerun's prefetch"
	}
	// Verify in the same run takes the count the first page gave (noteListed): no call of its own.
	return []EntityPlan{{Entity: ent.Name, Records: n, Calls: calls, How: how}}, nil
}

// offsetPages stores the pages of one OffsetPages get, each in its own transaction with its page
// log row and the inventory's cursor.
type offsetPages struct {
	g      *GetRun
	zone   *time.Location
	pass   int
	before int64
	total  *int64
	stored int64
}

func (p *offsetPages) store(ctx context.Context, rows []json.RawMessage, from, next int, last bool) error {
	e, ent := p.g.Env.e, p.g.Ent
	limited := false
	if lim := int64(e.testLimit); lim > 0 && p.before+p.stored+int64(len(rows)) >= lim {
		rows, last, limited = rows[:max(lim-p.before-p.stored, 0)], true, true
	}
	recs, _, err := decodeRows(ent, rows, p.zone)
	if err != nil {
		return err
	}
	saved, err := e.savePage(ctx, e.store(), Page{Records: []EntityRecords{{ent, recs}}, Log: []PageLog{{ent.Name, []PageRecord{{
		Pass: p.pass, Cursor: strconv.Itoa(from), Next: strconv.Itoa(next), Count: len(recs), Total: p.total, Last: last}}}}})
	if err != nil {
		return err
	}
	saved.AddCounts(p.g.Stats)
	p.stored += int64(len(recs))
	p.g.Stats.Pages++
	p.g.Stats.Complete = last
	if p.g.Stats.Pages%rest.MaxBatch == 1 || last {
		e.progress("get", ent.Name, p.before+p.stored, p.total, int(p.stored), p.g.Start)
	}
	if limited {
		return ErrLimitReached
	}
	return nil
}

// Prefetch makes OffsetPages a Prefetcher (prefetch.go): a new pass begins with the first page,
// sent alone; an interrupted one resumes at its cursor, not predicted.
func (o *OffsetPages) Prefetch(ctx context.Context, env Env, ent *Entity, ahead *Ahead) ([]rest.Command, error) {
	if ahead.Round != 1 {
		return nil, nil
	}
	inv, err := env.e.store().peekInventory(ctx, ent.Name)
	if err != nil {
		return nil, err
	}
	if inv.Pass > 0 && !inv.Complete {
		return nil, nil
	}
	ahead.Anytime(rest.Command{Method: o.List.Method, Params: o.params(0)})
	return nil, nil
}
