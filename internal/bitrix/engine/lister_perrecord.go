package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// PerRecord lists an entity whose method reads the rows of one record of another entity at a
// time, for every record of that entity stored by its own get, for methods that require one
// owner and take no list of them. One command per record, 50 to a
// batch, a record with a full page asked again for the next; Concurrency batches in flight,
// stored in record order. The inventory's cursor is the bitrix_records id of the last record
// whose rows are stored, so an interrupted get resumes after it.
//
// The cost is one command per record of Of: 2,000 requests for 100,000 owners, which is why such
// an entity is a command of its own rather than a child read by its parent's get.
type PerRecord struct {
	// Of are the entities whose records are walked (in bitrix_records id order, which is one
	// sequence for every entity).
	Of []string
	// Method reads one record's rows; Params builds its parameters from the record's entity and
	// portal id.
	Method string
	Params func(entity, sourceID string) map[string]any
	// RowsPath leads from the result to the rows.
	RowsPath []string
	// Gone recognises the answer for a record the portal no longer has: it has no rows.
	Gone func(err error) bool
}

// owner is a record of Of whose rows are read.
type owner struct {
	id               int64
	entity, sourceID string
}

func (p *PerRecord) Get(ctx context.Context, g *GetRun) error {
	e, ent := g.Env.e, g.Ent
	inv, err := p.begin(ctx, g)
	if err != nil {
		return err
	}
	cursor, err := strconv.ParseInt(inv.Cursor, 10, 64)
	if err != nil {
		return fmt.Errorf("%s: the inventory's cursor %q is not a record id", ent.Name, inv.Cursor)
	}
	g.Stats.Pass, g.Stats.Cursor = inv.Pass, inv.Cursor
	w := &perRecordWalk{p: p, g: g, pass: inv.Pass, stored: inv.PassRows, zone: e.zone}
	if g.Pass.Delta() {
		since := g.Pass.Since
		w.since = &since
	}
	e.log.Info("get started", "entity", ent.Name, "of", strings.Join(p.Of, ","), "pass", inv.Pass, "resumed", g.Stats.Resumed,
		"after_record", cursor, "kind", g.Pass.Kind, "reason", g.Pass.Reason)
	for {
		owners, err := w.owners(ctx, cursor, rest.MaxBatch*e.concurrency)
		if err != nil {
			return err
		}
		if len(owners) == 0 {
			break
		}
		if cursor, err = w.round(ctx, owners, cursor); err != nil {
			return err
		}
		if w.limited {
			return ErrLimitReached
		}
	}
	g.Stats.Complete = true
	followers := 0
	last := Page{Log: []PageLog{{ent.Name, []PageRecord{{Pass: w.pass,
		Cursor: strconv.FormatInt(cursor, 10), Next: strconv.FormatInt(cursor, 10), Last: true}}}}}
	if w.since != nil {
		// A delta pass reads no owner deleted since: their rows follow them as the pass ends
		// (a full pass concludes them with its unseen records, deletions.go).
		last.then = func(ctx context.Context, tx Store) (err error) {
			followers, err = w.follow(ctx, tx)
			return err
		}
	}
	if _, err = e.savePage(ctx, e.store(), last); err != nil {
		return err
	}
	if followers > 0 {
		g.Stats.Deleted += followers
		e.metrics.Processed.WithLabelValues(ent.Name, string(DeletedAtSource)).Add(float64(followers))
		e.log.Warn("records deleted on the portal with the record they belong to", "entity", ent.Name, "count", followers,
			"policy", e.deletions)
	}
	return nil
}

// begin resumes the interrupted pass as the kind it started as, or starts a new one of the kind
// decidePass gives: a PerRecord entity has no modification filter of its own, but its owners'
// gets read again (fetched_at) every owner that changed since their last pass, so after a
// complete pass of its own a delta pass reads only the owners read since that pass started. Its
// since is on this store's clock (fetched_at, get_started_at), not the portal's, and needs no
// margin: the owners' get ends before this one starts.
func (p *PerRecord) begin(ctx context.Context, g *GetRun) (Inventory, error) {
	e, ent := g.Env.e, g.Ent
	inv, err := e.store().loadInventory(ctx, ent.Name)
	if err != nil {
		return inv, err
	}
	g.Stats.Resumed = inv.Pass > 0 && !inv.Complete
	if g.Stats.Resumed {
		g.Pass = PassDecision{Kind: PassFull}
		if inv.Kind == PassDelta && inv.DeltaSince != nil {
			g.Pass = PassDecision{Kind: PassDelta, Since: *inv.DeltaSince}
		}
		if inv.Reason != nil {
			g.Pass.Reason = *inv.Reason
		}
		return inv, nil
	}
	fp := p.fingerprint()
	in := inv
	in.PortalStartedAt = inv.StartedAt
	d := e.decidePass(passInput{Inv: in, Fingerprint: fp})
	if d.Delta() {
		d.Since = *inv.StartedAt
		d.Reason = fmt.Sprintf("the last pass completed; reading the records of the %s read since it started (%s)",
			strings.Join(p.Of, ", "), d.Since.Format(time.RFC3339))
	}
	err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		if inv, err = NewStore(tx).startPass(ctx, ent.Name, e.testLimit); err != nil {
			return err
		}
		return NewStore(tx).markPass(ctx, ent.Name, d, time.Time{}, fp)
	})
	g.Pass = d
	return inv, err
}

// fingerprint is what a pass reads with: the method, the owners and the parameters of a call.
func (p *PerRecord) fingerprint() string {
	parts := []string{p.Method, strings.Join(p.Of, ","), strings.Join(p.RowsPath, ".")}
	for _, of := range p.Of {
		parts = append(parts, string(MustJSON(p.Params(of, ""))))
	}
	return Fingerprint(parts...)
}

// perRecordWalk is one get of a PerRecord entity.
type perRecordWalk struct {
	p       *PerRecord
	g       *GetRun
	pass    int
	stored  int64
	limited bool
	// since, in a delta pass, reads only the owners read at or after it.
	since *time.Time

	mu   sync.Mutex // guards zone, learned from the first answer of concurrent fetches
	zone *time.Location
}

// zoneFrom returns the portal's zone, learning it from an answer the first time.
func (w *perRecordWalk) zoneFrom(r *rest.Response) (*time.Location, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.zone == nil && r != nil {
		zone, err := w.g.Env.e.zoneOf(r)
		if err != nil {
			return nil, err
		}
		w.zone = zone
	}
	if w.zone == nil {
		return time.UTC, nil // no row was read, so no date either
	}
	return w.zone, nil
}

func (w *perRecordWalk) owners(ctx context.Context, after int64, n int) ([]owner, error) {
	if w.since != nil {
		return w.g.Env.e.store().ownersSince(ctx, w.p.Of, w.g.Ent.Name, after, *w.since, n)
	}
	return w.g.Env.e.store().owners(ctx, w.p.Of, w.g.Ent.Name, after, n)
}

// round reads the rows of the owners, 50 owners to a request and Concurrency requests in
// flight, and stores each request's rows in owner order; it returns the new cursor.
func (w *perRecordWalk) round(ctx context.Context, owners []owner, cursor int64) (int64, error) {
	type job struct {
		chunk      []owner
		from       int64
		wait, done chan struct{} // the job before has stored its rows; this one has
	}
	var jobs []job
	prev := make(chan struct{})
	close(prev)
	for chunk := range slices.Chunk(owners, rest.MaxBatch) {
		j := job{chunk: chunk, from: cursor, wait: prev, done: make(chan struct{})}
		jobs, prev, cursor = append(jobs, j), j.done, chunk[len(chunk)-1].id
	}
	stored, err := w.storedRows(ctx, owners)
	if err != nil {
		return cursor, err
	}
	err = runPool(ctx, len(jobs), queueJobs(jobs), func(ctx context.Context, j job) error {
		defer close(j.done)
		rows, gone, err := w.fetch(ctx, j.chunk)
		if err != nil {
			return err
		}
		// The rows stored for the owners read in full, which their answers must hold again.
		var before []int64
		for i, o := range j.chunk {
			if !gone[i] {
				before = append(before, stored[o.key()]...)
			}
		}
		select {
		case <-j.wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		if w.limited {
			return nil
		}
		return w.store(ctx, rows, j.from, j.chunk[len(j.chunk)-1].id, before)
	}, nil)
	return cursor, err
}

// fetch reads every row of the owners: a command per owner, again from the next page for an
// owner whose page was full. gone marks the owners the portal no longer has (Gone).
func (w *perRecordWalk) fetch(ctx context.Context, chunk []owner) (rows []json.RawMessage, gone []bool, err error) {
	e, p := w.g.Env.e, w.p
	byOwner := make([][]json.RawMessage, len(chunk))
	gone = make([]bool, len(chunk))
	command := func(i, start int) rest.Command {
		params := p.Params(chunk[i].entity, chunk[i].sourceID)
		params["start"] = start
		return rest.Command{Key: fmt.Sprintf("r%d_%d", i, start), Method: p.Method, Params: params}
	}
	cmds := make([]rest.Command, len(chunk))
	for i := range chunk {
		cmds[i] = command(i, 0)
	}
	for len(cmds) > 0 {
		var more []rest.Command
		err := e.batchEach(ctx, cmds, func(key string, r *rest.Response) error {
			var i, start int
			_, _ = fmt.Sscanf(key, "r%d_%d", &i, &start)
			if _, err := w.zoneFrom(r); err != nil {
				return err
			}
			rows, err := r.Rows(p.RowsPath...)
			if err != nil {
				return fmt.Errorf("%s of %s %s: %w", w.g.Ent.Name, chunk[i].entity, chunk[i].sourceID, err)
			}
			byOwner[i] = append(byOwner[i], rows...)
			// A next page goes on the owner's listing, and so does a full page without one (an
			// empty answer then ends it); a total is never asked.
			hasNext := r.Next != nil && *r.Next > start && len(rows) > 0
			if hasNext || len(rows) == rest.PageSize {
				next := start + len(rows)
				if hasNext {
					next = *r.Next
				}
				more = append(more, command(i, next))
			}
			return nil
		}, func(key string, err error) error {
			var i int
			_, _ = fmt.Sscanf(key, "r%d_", &i)
			if p.Gone != nil && p.Gone(err) {
				gone[i] = true
				e.log.Warn("record gone from the portal while its rows were read", "entity", w.g.Ent.Name,
					"of", chunk[i].entity, "id", chunk[i].sourceID, "error", err)
				return nil
			}
			return fmt.Errorf("%s of %s %s: %w", w.g.Ent.Name, chunk[i].entity, chunk[i].sourceID, err)
		})
		if err != nil {
			return nil, nil, err
		}
		cmds = more
	}
	for _, r := range byOwner {
		rows = append(rows, r...)
	}
	return rows, gone, nil
}

// store keeps the rows of a chunk of owners with its page log row and the inventory's cursor, in
// one transaction. In a delta pass, the rows stored before for the owners read in full (before)
// that their answers no longer hold are concluded deleted in it.
func (w *perRecordWalk) store(ctx context.Context, rows []json.RawMessage, from, to int64, before []int64) error {
	e, ent := w.g.Env.e, w.g.Ent
	if lim := int64(e.testLimit); lim > 0 && w.stored+int64(len(rows)) >= lim {
		rows, w.limited = rows[:max(lim-w.stored, 0)], true
	}
	zone, err := w.zoneFrom(nil)
	if err != nil {
		return err
	}
	recs, _, err := decodeRows(ent, rows, zone)
	if err != nil {
		return err
	}
	page := Page{Records: []EntityRecords{{ent, recs}}, Log: []PageLog{{ent.Name, []PageRecord{{
		Pass: w.pass, Cursor: strconv.FormatInt(from, 10), Next: strconv.FormatInt(to, 10), Count: len(recs), Last: w.limited}}}}}
	deleted := 0
	if len(before) > 0 && !w.limited {
		page.then = func(ctx context.Context, tx Store) (err error) {
			deleted, err = w.conclude(ctx, tx, before, recs)
			return err
		}
	}
	saved, err := e.savePage(ctx, e.store(), page)
	if err != nil {
		return err
	}
	if deleted > 0 {
		w.g.Stats.Deleted += deleted
		e.metrics.Processed.WithLabelValues(ent.Name, string(DeletedAtSource)).Add(float64(deleted))
		e.log.Info("rows read again no longer on the portal: deleted at the source", "entity", ent.Name, "count", deleted,
			"policy", e.deletions)
	}
	saved.AddCounts(w.g.Stats)
	w.stored += int64(len(recs))
	w.g.Stats.Pages++
	w.g.Stats.Complete = w.limited
	e.progress("get", ent.Name, w.stored, nil, int(w.stored), w.g.Start)
	return nil
}

// Total is what get read: the portal cannot count the rows of all records at once (only one record's), so the
// source count verify compares with is what get read.
func (p *PerRecord) Total(ctx context.Context, env Env, ent *Entity) (int64, error) {
	e := env.e
	return e.store().storedCount(ctx, ent.Name)
}

// Plan is one command per record of Of (as many as its get read, or as the portal counted), 50
// to a call; how many rows they hold is unknown until they are read. A delta pass (the owners'
// passes all delta, its own last pass complete) asks only for the owners those delta passes
// read: as many as they changed.
func (p *PerRecord) Plan(ctx context.Context, env Env, ent *Entity) ([]EntityPlan, error) {
	e := env.e
	kind, reason, err := p.nextPass(ctx, e, ent)
	if err != nil {
		return nil, err
	}
	if kind == PassDelta {
		var changed int64
		for _, of := range p.Of {
			changed += e.planning[of].Changed
		}
		return []EntityPlan{{Entity: ent.Name, Records: -1, Calls: CeilDiv(changed, rest.MaxBatch), Pass: kind, PassReason: reason,
			How: fmt.Sprintf("one %s per record of %s its delta pass reads (%d), 50 to a call", p.Method, strings.Join(p.Of, ", "), changed)}}, nil
	}
	var n int64
	how := fmt.Sprintf("one %s per record of %s, 50 to a call; no count before they are read", p.Method, strings.Join(p.Of, ", "))
	for _, of := range p.Of {
		read, err := e.store().storedCount(ctx, of)
		if err != nil {
			return nil, err
		}
		if read == 0 { // not read yet: as many as the portal counts
			owner := e.Entity(of)
			total, err := estimated(owner.Lister.Total(ctx, e.env(), owner))
			if err != nil {
				return nil, err
			}
			read = total
			how += fmt.Sprintf(" (%s not read yet: the portal's count)", of)
		}
		n += read
	}
	return []EntityPlan{{Entity: ent.Name, Records: -1, Calls: CeilDiv(n, rest.MaxBatch), How: how, Pass: kind, PassReason: reason}}, nil
}

// nextPass is the kind of the per-record lister's next pass as the plan sees it: delta when its
// own last pass completed unlimited and every owner's planned pass is delta.
func (p *PerRecord) nextPass(ctx context.Context, e *Engine, ent *Entity) (PassKind, string, error) {
	inv, err := e.store().peekInventory(ctx, ent.Name)
	if err != nil {
		return "", "", err
	}
	switch {
	case e.full:
		return PassFull, "asked with --full", nil
	case inv.Pass == 0:
		return PassFull, "no complete full pass yet", nil
	case !inv.Complete:
		return PassFull, "the last pass did not complete", nil
	case inv.Limit != nil:
		return PassFull, fmt.Sprintf("the last pass was limited to %d records (test_limit)", *inv.Limit), nil
	}
	for _, of := range p.Of {
		if op, ok := e.planning[of]; !ok || op.Pass != PassDelta {
			return PassFull, fmt.Sprintf("the pass of %s, whose records it reads per record, is full", of), nil
		}
	}
	return PassDelta, fmt.Sprintf("the passes of %s are delta: only the records they read", strings.Join(p.Of, ", ")), nil
}
