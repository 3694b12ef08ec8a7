package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// IDScan lists an entity by ID-keyed enumeration (research/bitrix.md §3): sorted by ID, filtered
// to an ID range, start=-1 so the portal never counts, pages chained inside batch calls. The
// pass is cut into ID ranges walked at once (idranges.go), each range's place kept in
// bitrix_get_ranges, so an interrupted get resumes every range where it stopped.
type IDScan struct {
	Scan rest.Scan
	// CountParams replace Scan.Params keys for the count call (a narrow select, say), which
	// reads one page with counting on.
	CountParams map[string]any
	// Scope, when set, is the name the scan keeps its inventory, ID ranges and page log under,
	// instead of the entity's: an entity read by several scans (one per type of its records)
	// gives each its own. IDPrefix is then put before every row's id to make the record's
	// portal id ("1038:" for an item 17 of the type 1038: "1038:17").
	Scope, IDPrefix string
	// Fill are fields added to every row that lacks them, before it is stored (the type the scan
	// reads, which the portal need not send).
	Fill map[string]any
	// SelectCustom adds to Scan.Params' select the names of the entity's custom fields that
	// fields-get read, for methods that return a custom field only when it is named.
	SelectCustom bool
	// Complete, when set, prepares a page's rows before they are stored: fills in what the
	// listing leaves out and only a per-record method gives, and drops what the listing adds
	// only for display.
	Complete func(ctx context.Context, env Env, rows []json.RawMessage) ([]json.RawMessage, error)
	// CompleteMethod names the per-record method Complete calls for every row, 50 to a call
	// (a record's links listed apart), so that the plan counts those calls; empty when Complete calls
	// one only for some rows, or none.
	CompleteMethod string
	// Modified names the filter fields of the method that hold a record's modification time
	// ("updatedTime", "lastActivityTime" for crm.item.list; "CHANGED_DATE", "ACTIVITY_DATE"
	// for the task list): a delta pass (pass.go) reads the records where any of them is after
	// the pass's since, one filtered scan per field. Empty means the method has none: every pass
	// is full. docs/bitrix-delta.md says, per entity, which fields and why.
	Modified []string
	// Unfiltered, when Modified is empty, says why the entity cannot be read by modification
	// time (NoDelta): the reason every pass of it is full.
	Unfiltered string
}

// scope is the name the scan's inventory, ranges and page log are kept under.
func (s *IDScan) scope(ent *Entity) string {
	if s.Scope != "" {
		return s.Scope
	}
	return ent.Name
}

// prepared returns the scan with the select the entity needs now: its children's counts
// (ChildFetch.CountSelect, so that the stored payload holds them) and its custom fields
// (SelectCustom).
func (s *IDScan) prepared(ctx context.Context, e *Engine, ent *Entity) (*IDScan, error) {
	names := countSelects(e.registry, ent)
	if s.SelectCustom {
		custom, err := e.store().storedFieldNames(ctx, ent.Name)
		if err != nil {
			return s, err
		}
		names = append(names, custom...)
	}
	if len(names) == 0 {
		return s, nil
	}
	c := *s
	c.Scan.Params = maps.Clone(s.Scan.Params)
	sel, _ := c.Scan.Params["select"].([]string)
	sel = slices.Clone(sel)
	for _, n := range names {
		if !slices.Contains(sel, n) {
			sel = append(sel, n)
		}
	}
	c.Scan.Params["select"] = sel
	return &c, nil
}

// complete runs Complete over rows, if the scan has one.
func (s *IDScan) complete(ctx context.Context, e *Engine, rows []json.RawMessage) ([]json.RawMessage, error) {
	if s.Complete == nil || len(rows) == 0 {
		return rows, nil
	}
	return s.Complete(ctx, e.env(), rows)
}

func (s *IDScan) Get(ctx context.Context, g *GetRun) error {
	e, ent := g.Env.e, g.Ent
	s, err := s.prepared(ctx, e, ent)
	if err != nil {
		return err
	}
	w := &rangeWalk{g: g, scan: s}
	inv, first, err := s.begin(ctx, w)
	if err != nil {
		return err
	}
	w.pass, w.before = inv.Pass, inv.PassRows
	g.Stats.Pass, g.Stats.Cursor = inv.Pass, inv.Cursor
	if g.Pass.Delta() {
		return s.delta(ctx, w)
	}
	if first != nil {
		err := w.store(ctx, w.ranges[:1], [][]rest.Page{{*first}})
		if err != nil {
			if errors.Is(err, ErrLimitReached) {
				return nil
			}
			return err
		}
	}
	if err := w.run(ctx); err != nil {
		return err
	}
	return e.noteListed(ctx, s.scope(ent), w.total, g.Stats.Resumed) // the bounds' total: verify's count
}

// begin plans the walk's ranges (those of an interrupted pass where each stopped, or a new pass
// from the listing's bounds, whose first page it returns to be stored) and learns the portal's
// time zone. A new pass is full or delta as decidePass weighs the last one (its inventory, read
// before the pass starts) against the bounds' answer, whose time block is the portal's clock; a
// delta pass plans no ranges of the whole listing and stores no page of it (IDScan.delta reads
// it). An interrupted pass is resumed as the kind it started as (g.Pass).
func (s *IDScan) begin(ctx context.Context, w *rangeWalk) (inv Inventory, first *rest.Page, err error) {
	e, ent, g := w.g.Env.e, w.g.Ent, w.g
	scope := s.scope(ent)
	if inv, err = e.store().loadInventory(ctx, scope); err != nil {
		return inv, nil, err
	}
	g.Stats.Resumed = inv.Pass > 0 && !inv.Complete
	if g.Stats.Resumed {
		g.Pass = resumedPass(inv)
		if g.Pass.Delta() {
			e.log.Info("resuming an interrupted delta pass where each filtered scan stopped", "entity", ent.Name,
				"scope", scope, "pass", inv.Pass, "kind", g.Pass.Kind, "reason", g.Pass.Reason,
				"since", g.Pass.Since.Format(time.RFC3339), "rows_so_far", inv.PassRows)
			w.zone, err = e.sourceZone(ctx, ent.Name, s.Scan)
			return inv, nil, err
		}
		if w.ranges, err = e.store().loadRanges(ctx, scope, inv); err != nil {
			return inv, nil, err
		}
		w.density, w.total = densityOf(w.ranges, inv.SourceTotal), inv.SourceTotal
		e.log.Info("resuming an interrupted get where each ID range stopped", "entity", ent.Name, "pass", inv.Pass,
			"kind", g.Pass.Kind, "reason", g.Pass.Reason, "ranges_open", countOpen(w.ranges), "rows_so_far", inv.PassRows)
		if w.size, err = e.store().storedRowSize(ctx, ent.Name); err != nil {
			return inv, nil, err
		}
		w.zone, err = e.sourceZone(ctx, ent.Name, s.Scan)
		return inv, nil, err
	}
	// The bounds' answer shows the portal's clock: a new pass learns the zone from it, one
	// request fewer than a probe of its own, and decides its kind by it.
	b, err := e.source.ScanBounds(ctx, s.Scan, "0")
	if err != nil {
		return inv, nil, err
	}
	if w.zone, err = e.clockZone(ent.Name, b.Time); err != nil {
		return inv, nil, err
	}
	fingerprint, err := s.fingerprint()
	if err != nil {
		return inv, nil, err
	}
	portalNow := portalClock(b.Time)
	in := passInput{Inv: inv, Fingerprint: fingerprint, PortalNow: portalNow, AnsweredAt: e.answeredAt(b.Time),
		NoDelta: s.NoDelta()}
	g.Pass = e.decidePass(in)
	// The count sizes ranges and shows progress; a count the first page contradicts (the
	// page's own size) is none. The walk ends where the ranges' pages end, whatever it said.
	w.total = boundsTotal(b)
	if !g.Pass.Delta() {
		w.ranges, w.density = newRanges(b, e.testLimit)
	}
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		st := NewStore(tx)
		if inv, err = st.startPass(ctx, scope, e.testLimit); err != nil {
			return err
		}
		if err := st.markPass(ctx, scope, g.Pass, portalNow, fingerprint); err != nil {
			return err
		}
		if g.Pass.Delta() {
			// The whole listing's count, for status and the range counts that follow the
			// filtered scans: the delta's pages add rows, not a total.
			return st.deltaTotal(ctx, scope, w.total)
		}
		return st.saveRanges(ctx, scope, inv.Pass, w.ranges)
	})
	if err != nil {
		return inv, nil, err
	}
	attrs := []any{"entity", ent.Name, "pass", inv.Pass, "kind", g.Pass.Kind, "reason", g.Pass.Reason,
		"test_limit", e.testLimit, "total", b.Total, "last_id", b.Last}
	if scope != ent.Name {
		attrs = append(attrs, "scope", scope)
	}
	if g.Pass.Delta() {
		w.bounds = &b
		e.log.Info("get started", append(attrs, "since", g.Pass.Since.Format(time.RFC3339), "modified", s.Modified)...)
		return inv, nil, nil
	}
	e.log.Info("get started", append(attrs, "ranges", len(w.ranges))...)
	return inv, &b.First, nil
}

// boundsTotal is the bounds' count of the listing, or nil when the first page contradicts it
// (the page's own size is no count).
func boundsTotal(b rest.Bounds) *int64 {
	if b.Total >= len(b.First.Rows) && (b.First.Last || b.Total > len(b.First.Rows)) {
		t := int64(b.Total)
		return &t
	}
	return nil
}

// resumedPass is the decision of an interrupted pass, as its inventory keeps it.
func resumedPass(inv Inventory) PassDecision {
	d := PassDecision{Kind: inv.Kind}
	if d.Kind == "" {
		d.Kind = PassFull
	}
	if inv.Reason != nil {
		d.Reason = *inv.Reason
	}
	if d.Delta() && inv.DeltaSince != nil {
		d.Since = *inv.DeltaSince
	} else if d.Delta() { // a delta pass always records its since; without one, read it all
		d = PassDecision{Kind: PassFull, Reason: "the interrupted delta pass recorded no since"}
	}
	return d
}

// fingerprint is what a pass of the scan reads with: its method and its parameters as they are
// sent (the select with the custom fields named, the filter), in canonical JSON (map keys
// sorted).
func (s *IDScan) fingerprint() (string, error) {
	params, err := json.Marshal(s.Scan.Params)
	if err != nil {
		return "", fmt.Errorf("fingerprint of %s: %w", s.Scan.Method, err)
	}
	return Fingerprint(s.Scan.Method, string(params)), nil
}

// portalClock is the portal's clock in an answer's time block (date_start, with the portal's
// offset; start, a Unix time, when that does not parse); zero when the block has neither.
func portalClock(t rest.Time) time.Time {
	if at, err := time.Parse(time.RFC3339, t.DateStart); err == nil {
		return at
	}
	if t.Start > 0 {
		sec, frac := math.Modf(t.Start)
		return time.Unix(int64(sec), int64(frac*1e9))
	}
	return time.Time{}
}

func countOpen(ranges []*idRange) int {
	n := 0
	for _, r := range ranges {
		if !r.done {
			n++
		}
	}
	return n
}

func (s *IDScan) Total(ctx context.Context, env Env, ent *Entity) (int64, error) {
	e := env.e
	params := map[string]any{"start": 0}
	for key, v := range s.Scan.Params {
		params[key] = v
	}
	for key, v := range s.CountParams {
		params[key] = v
	}
	resp, err := e.source.Call(ctx, s.Scan.Method, params)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", ent.Name, err)
	}
	if resp.Total == nil {
		return 0, fmt.Errorf("count %s: %s reported no total", ent.Name, s.Scan.Method)
	}
	return countOf(ent, s.Scan.Method, resp, s.Scan.RowsPath)
}

// byIDs reads the records with the given ids (askByIDs: a filter on @ID, 50 to a page, pages batched).
func (s *IDScan) byIDs(ctx context.Context, e *Engine, ent *Entity, ids []string, zone *time.Location) ([]Incoming, error) {
	s, err := s.prepared(ctx, e, ent)
	if err != nil {
		return nil, err
	}
	asks, err := s.askByIDs(ids, nil)
	if err != nil {
		return nil, err
	}
	cmds := make([]rest.Command, len(asks))
	for i, a := range asks {
		cmds[i] = a.cmd
	}
	var out []Incoming
	err = e.batchEach(ctx, cmds, func(_ string, r *rest.Response) error {
		rows, err := r.Rows(s.Scan.RowsPath...)
		if err != nil {
			return err
		}
		if rows, err = s.complete(ctx, e, rows); err != nil {
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

// idField is the row field holding a record's id: the entity's IDField, the ID scan's (some
// methods send "id"), else "ID".
func (e *Entity) idField() string {
	if e.IDField != "" {
		return e.IDField
	}
	if s, ok := e.Lister.(*IDScan); ok && s.Scan.IDField != "" {
		return s.Scan.IDField
	}
	return "ID"
}

// EntityRecords are records of one entity on their way into bitrix_records: one read can hold
// several entities' records (a parent's page and its children), stored in one transaction.
type EntityRecords struct {
	Ent  *Entity
	Recs []Incoming
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
// beyond the limit (the records the first ones refer to).
func (e *Engine) pullReferenced(ctx context.Context, batch []EntityRecords, zone *time.Location) ([]EntityRecords, error) {
	wanted := map[string][]string{}
	var order []string
	for _, b := range batch {
		for _, ref := range b.Ent.Refs {
			for _, r := range b.Recs {
				fields, err := FieldsOf(r.payload)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", b.Ent.Name, r.sourceID, err)
				}
				if wanted[ref.Entity] == nil {
					order = append(order, ref.Entity)
				}
				wanted[ref.Entity] = append(wanted[ref.Entity], ref.ids(fields)...)
			}
		}
	}
	var out []EntityRecords
	for _, name := range order {
		target, _ := e.registry.Entity(name)
		scan, ok := target.Lister.(*IDScan)
		if !ok {
			continue
		}
		ids := wanted[name]
		slices.Sort(ids)
		want, err := e.store().missing(ctx, name, slices.Compact(ids))
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
		e.log.Info("records pulled in beyond test_limit", "entity", name, "referenced", len(want), "found", len(recs))
		out = append(out, EntityRecords{target, recs})
	}
	return out, nil
}

// decodeRows prepares rows of a listing and returns their ids, in order.
func decodeRows(ent *Entity, rows []json.RawMessage, zone *time.Location) ([]Incoming, []string, error) {
	return decodeRowsAs(ent, "", nil, rows, zone)
}

// decodeRowsAs is decodeRows for rows whose records' portal ids are prefix + the row's id (the
// ids returned are the rows' own, the listing's cursors), with the fields of fill added where a
// row lacks them; the row's ParentKey, if the entity has one, names its parent.
func decodeRowsAs(ent *Entity, prefix string, fill map[string]any, rows []json.RawMessage, zone *time.Location) ([]Incoming, []string, error) {
	recs := make([]Incoming, 0, len(rows))
	ids := make([]string, 0, len(rows))
	idField := ent.idField()
	for _, row := range rows {
		fields, err := FieldsOf(row)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ent.Name, err)
		}
		if filled := fillFields(fields, fill); filled {
			row = MustJSON(fields)
		}
		id := Text(fields, idField)
		if id == "" {
			return nil, nil, fmt.Errorf("%s: row without %s: %.200s", ent.Name, idField, row)
		}
		parent := ""
		switch {
		case ent.ParentKey != "":
			parent = Text(fields, ent.ParentKey)
		case ent.SelfRef != "" && !None(Text(fields, ent.SelfRef)):
			parent = Text(fields, ent.SelfRef) // kept where set's parents-first pick looks for it
		}
		in, err := NewIncoming(ent, prefix+id, parent, row, fields, zone)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, in)
		ids = append(ids, id)
	}
	return recs, ids, nil
}

// fillFields adds to fields those of fill it lacks, and reports whether it added any.
func fillFields(fields map[string]json.RawMessage, fill map[string]any) bool {
	added := false
	for k, v := range fill {
		if _, ok := fields[k]; !ok {
			fields[k] = MustJSON(v)
			added = true
		}
	}
	return added
}
