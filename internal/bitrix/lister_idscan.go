package bitrix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/status"
)

// IDScan lists an entity by ID-keyed enumeration (research/bitrix.md §3): sorted by ID, filtered
// to IDs above the last one stored, start=-1 so the portal never counts, 50 pages chained in one
// batch call. The inventory's cursor is the last ID stored, so an interrupted get resumes there.
type IDScan struct {
	Scan rest.Scan
	// CountParams replace Scan.Params keys for the count call (a narrow select, say), which
	// reads one page with counting on.
	CountParams map[string]any
}

func (s *IDScan) get(ctx context.Context, g *getRun) error {
	e, ent := g.e, g.ent
	zone, err := e.sourceZone(ctx, ent.Name, s.Scan)
	if err != nil {
		return err
	}
	inv, err := loadInventory(ctx, e.Pool, ent.Name)
	if err != nil {
		return err
	}
	g.st.Resumed = inv.Pass > 0 && !inv.Complete
	if g.st.Resumed {
		e.Log.Info("resuming an interrupted get from the page log", "entity", ent.Name, "pass", inv.Pass,
			"after_id", inv.Cursor, "rows_so_far", inv.PassRows)
	} else {
		if inv, err = startPass(ctx, e.Pool, ent.Name, e.TestLimit); err != nil {
			return err
		}
		e.Log.Info("get started", "entity", ent.Name, "pass", inv.Pass, "test_limit", e.TestLimit)
	}
	g.st.Pass, g.st.Cursor = inv.Pass, inv.Cursor
	p := &scanPages{g: g, zone: zone, pass: inv.Pass, before: inv.PassRows}
	return e.Source.ListByID(ctx, s.Scan, inv.Cursor, func(page rest.Page) error { return p.store(ctx, page) })
}

func (s *IDScan) total(ctx context.Context, e *Engine, ent *Entity) (int64, error) {
	params := map[string]any{"start": 0}
	for key, v := range s.Scan.Params {
		params[key] = v
	}
	for key, v := range s.CountParams {
		params[key] = v
	}
	resp, err := e.Source.Call(ctx, s.Scan.Method, params)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", ent.Name, err)
	}
	if resp.Total == nil {
		return 0, fmt.Errorf("count %s: %s reported no total", ent.Name, s.Scan.Method)
	}
	return int64(*resp.Total), nil
}

// byIDs reads the records with the given ids (a filter on @ID, 50 to a page, pages batched).
func (s *IDScan) byIDs(ctx context.Context, e *Engine, ent *Entity, ids []string, zone *time.Location) ([]incoming, error) {
	filterParam := s.Scan.FilterParam
	if filterParam == "" {
		filterParam = "filter"
	}
	var cmds []rest.Command
	for chunk := range slices.Chunk(ids, rest.PageSize) {
		params := map[string]any{}
		for key, v := range s.Scan.Params {
			params[key] = v
		}
		params[filterParam] = map[string]any{"@ID": chunk}
		cmds = append(cmds, rest.Command{Key: fmt.Sprintf("p%d", len(cmds)), Method: s.Scan.Method, Params: params})
	}
	var out []incoming
	err := e.batchEach(ctx, cmds, func(_ string, r *rest.Response) error {
		rows, err := r.Rows()
		if err != nil {
			return err
		}
		recs, _, err := decodeRows(ent, rows, zone)
		out = append(out, recs...)
		return err
	}, func(_ string, err error) error { return err })
	if err != nil {
		return nil, fmt.Errorf("read %s by id: %w", ent.Name, err)
	}
	return out, nil
}

// scanPages stores the pages of one IDScan get.
type scanPages struct {
	g      *getRun
	zone   *time.Location
	pass   int
	before int64 // rows of the pass stored before this get
	total  *int64
}

// store keeps one page: its records, the children of those records, under test_limit the
// records they refer to that are not stored yet, the page log row and the inventory's cursor,
// all in one transaction.
func (p *scanPages) store(ctx context.Context, page rest.Page) error {
	g := p.g
	e, ent := g.e, g.ent
	rows, last, limited := page.Rows, page.Last, false
	if lim := e.TestLimit; lim > 0 {
		left := int64(lim) - p.before - int64(g.st.Of(ent.Name).Rows)
		if int64(len(rows)) >= left {
			rows, last, limited = rows[:max(left, 0)], true, true
		}
	}
	if p.total == nil && page.Total >= 0 {
		t := p.before + int64(page.Total)
		p.total = &t
	}
	recs, ids, err := decodeRows(ent, rows, p.zone)
	if err != nil {
		return err
	}
	next := page.Next
	if len(ids) > 0 {
		next = ids[len(ids)-1]
	}
	batch := []entityRecords{{ent, recs}}
	for _, child := range e.registry().Children(ent) {
		if child.Fetch == nil {
			continue
		}
		kids, err := child.Fetch.fetch(ctx, e, child, ids, p.zone)
		if err != nil {
			return err
		}
		batch = append(batch, entityRecords{child, kids})
	}
	if e.TestLimit > 0 {
		pulled, err := e.pullReferenced(ctx, batch, p.zone)
		if err != nil {
			return err
		}
		batch = append(batch, pulled...)
	}
	err = pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
		if err := e.saveBatch(ctx, tx, batch, g.st); err != nil {
			return err
		}
		return logPage(ctx, tx, ent.Name, e.RunID, pageRecord{pass: p.pass, cursor: page.Cursor, next: next,
			count: len(recs), total: p.total, last: last})
	})
	if err != nil {
		return err
	}
	g.st.Pages++
	g.st.Complete = last
	// One line per batch of the listing (50 pages), and for the last page.
	if g.st.Pages%rest.MaxBatch == 1 || last {
		done := g.st.Of(ent.Name).Rows
		e.progress("get", ent.Name, p.before+int64(done), p.total, done, g.start)
	}
	if limited {
		return errLimitReached
	}
	return nil
}

// entityRecords are records of one entity on their way into bitrix_records.
type entityRecords struct {
	ent  *Entity
	recs []incoming
}

// saveBatch stores records of several entities read together, counts them in st and in the
// records_extracted_total metric, and clears the VERIFIED flag of every entity whose records
// were added or changed.
func (e *Engine) saveBatch(ctx context.Context, tx pgx.Tx, batch []entityRecords, st *GetStats) error {
	change := status.Change{Reason: "changed on the source", Actor: e.Actor, RunID: e.RunID}
	for _, b := range batch {
		sv, err := saveRecords(ctx, tx, b.ent.Name, b.recs, change)
		if err != nil {
			return err
		}
		if sv.inserted+sv.changed > 0 {
			if err := unverify(ctx, tx, verifiedAs(e.registry(), b.ent)); err != nil {
				return err
			}
		}
		st.add(b.ent.Name, len(b.recs), sv)
		if len(b.recs) > 0 {
			e.Metrics.RecordsExtracted.WithLabelValues(b.ent.Name).Add(float64(len(b.recs)))
		}
	}
	return nil
}

// verifiedAs is the entity whose VERIFIED flag covers ent: its parent for a child.
func verifiedAs(reg *Registry, ent *Entity) string {
	for ent.Parent != "" {
		ent, _ = reg.Entity(ent.Parent)
	}
	return ent.Name
}

// pullReferenced reads the records that the batch's records refer to and that are not stored
// yet, from entities listed by an IDScan: seed 000 lets a limited get bring its dependencies in
// beyond the limit (the owners and members of the first workgroups).
func (e *Engine) pullReferenced(ctx context.Context, batch []entityRecords, zone *time.Location) ([]entityRecords, error) {
	wanted := map[string][]string{}
	var order []string
	for _, b := range batch {
		for _, ref := range b.ent.Refs {
			for _, r := range b.recs {
				fields, err := fieldsOf(r.payload)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", b.ent.Name, r.sourceID, err)
				}
				if wanted[ref.Entity] == nil {
					order = append(order, ref.Entity)
				}
				wanted[ref.Entity] = append(wanted[ref.Entity], ref.ids(fields)...)
			}
		}
	}
	var out []entityRecords
	for _, name := range order {
		target, _ := e.registry().Entity(name)
		scan, ok := target.Lister.(*IDScan)
		if !ok {
			continue
		}
		ids := wanted[name]
		slices.Sort(ids)
		want, err := missing(ctx, e.Pool, name, slices.Compact(ids))
		if err != nil || len(want) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		recs, err := scan.byIDs(ctx, e, target, want, zone)
		if err != nil {
			return nil, err
		}
		e.Log.Info("records pulled in beyond test_limit", "entity", name, "referenced", len(want), "found", len(recs))
		out = append(out, entityRecords{target, recs})
	}
	return out, nil
}

// decodeRows prepares rows of a listing and returns their source ids, in order.
func decodeRows(ent *Entity, rows []json.RawMessage, zone *time.Location) ([]incoming, []string, error) {
	recs := make([]incoming, 0, len(rows))
	ids := make([]string, 0, len(rows))
	for _, row := range rows {
		fields, err := fieldsOf(row)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ent.Name, err)
		}
		id := text(fields, "ID")
		if id == "" {
			return nil, nil, fmt.Errorf("%s: row without ID: %.200s", ent.Name, row)
		}
		in, err := newIncoming(ent, id, "", row, fields, zone)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, in)
		ids = append(ids, id)
	}
	return recs, ids, nil
}
