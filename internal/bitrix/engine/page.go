package engine

import (
	"cmp"
	"context"

	"github.com/ingest-dev/ingest/internal/status"
)

// Page is what one read of the portal brought, for SavePage to store as a whole: the records,
// the page log rows that move the get's cursor past them, and nothing of it without the rest,
// so that a get interrupted anywhere resumes where what is stored ends.
type Page struct {
	// Records are the records read, entity by entity: a page of parents brings their children
	// and, under test_limit, the records they refer to. A record marked unreachable (its
	// payload through MarkUnreachable, or Incoming.WithRefusal) is stored and refused: moved on
	// to IMPORT_ERR with its reason.
	Records []EntityRecords
	// Reason is the status history's reason for a stored record that changed ("changed on the
	// source" when empty).
	Reason string
	// Unread marks records kept for what the portal refused to show (a key whose walk it
	// refused, KeyWalk.Lost) rather than read: they are not counted as extracted, and they clear
	// VERIFIED even when stored unchanged, since verify must look at them again.
	Unread bool
	// Log are the page log rows of the read, each under the inventory name of the listing it
	// walked (the entity's, or a scan's Scope).
	Log []PageLog

	// ranges, set by an IDScan's walk, are the ID ranges the read moved: their cursors are
	// stored with the page, and its page log rows are logged as theirs (logPages).
	ranges *rangeLog
	// then, when set, makes writes of the engine's own in the page's transaction, after the
	// page's (a walk's lost keys, KeyWalk.Lost).
	then func(ctx context.Context, tx Store) error
	// reread are the children a delta pass read again with the page's parents: each parent
	// concludes, once they are stored, its stored children the portal no longer returned
	// (children_delta.go).
	reread []childrenRead
}

// PageLog is the page log rows of one listing read by a Page.
type PageLog struct {
	// Entity is the name the listing's inventory row and page log are kept under.
	Entity string
	Pages  []PageRecord
}

// rangeLog is where the ID ranges of an IDScan's pass stand after a page.
type rangeLog struct {
	scope   string
	pass    int
	steps   []rangeStep
	pages   []PageRecord
	total   *int64
	limited bool
}

// rangeStep is where one ID range (by its lower bound) stands after a page.
type rangeStep struct {
	lo, cursor string
	done       bool
}

// PageResult is what SavePage did with a page.
type PageResult struct {
	// Counts are the page's records by entity, by what storing them did (Unread ones too).
	Counts map[string]*GetCounts
	// Refused counts the records moved to IMPORT_ERR as unreachable.
	Refused int
	// Deleted counts the records (children, and theirs) the page concluded deleted at the source:
	// a parent read again no longer had them (children_delta.go).
	Deleted int

	saved []Saved // by Page.Records, for the log and the metrics
}

// AddCounts adds the page's counts of records, and of records it concluded deleted, to a get's
// (not Refused: a get counts the unreachable records its own way).
func (r PageResult) AddCounts(st *GetStats) {
	for name, c := range r.Counts {
		st.Add(name, c.Rows, Saved{Inserted: c.Inserted, Changed: c.Changed, Unchanged: c.Unchanged})
	}
	st.Deleted += r.Deleted
}

// SavePage stores a page: its records (new ones as NEW, changed ones back to NEW with the page's
// reason), the unreachable ones among them moved on to IMPORT_ERR, the VERIFIED flag cleared of
// every entity whose records changed (a child's is its parent's), and the page log rows, all in
// one transaction: st's when st is one (inside Store.Tx, with writes of the caller's own), else
// one of its own. The records whose text was cleaned or refused are logged, and those read
// counted in records_extracted_total, once the transaction commits when it is SavePage's own
// (when it is st's, as soon as the page is written: SavePage cannot see the commit).
func (v Env) SavePage(ctx context.Context, st Store, p Page) (PageResult, error) {
	return v.e.savePage(ctx, st, p)
}

func (e *Engine) savePage(ctx context.Context, st Store, p Page) (PageResult, error) {
	if st.tx != nil {
		res, err := e.writePage(ctx, st, p)
		if err != nil {
			return res, err
		}
		e.notePage(p, res)
		return res, nil
	}
	var res PageResult
	err := st.Tx(ctx, func(tx Store) error {
		var err error
		res, err = e.writePage(ctx, tx, p)
		return err
	})
	if err != nil {
		return PageResult{}, err
	}
	e.notePage(p, res)
	return res, nil
}

// writePage is SavePage's writes, in the transaction tx.
func (e *Engine) writePage(ctx context.Context, tx Store, p Page) (PageResult, error) {
	var res PageResult
	var counts GetStats
	change := status.Change{Reason: cmp.Or(p.Reason, "changed on the source"), Actor: e.actor, RunID: e.runID}
	for _, b := range p.Records {
		sv, err := tx.saveRecords(ctx, b.Ent.Name, b.Recs, change)
		if err != nil {
			return res, err
		}
		res.saved = append(res.saved, sv)
		refused, err := tx.refuseUnreachable(ctx, b.Ent.Name, b.Recs, status.Change{Actor: e.actor, RunID: e.runID})
		if err != nil {
			return res, err
		}
		res.Refused += refused
		if sv.Inserted+sv.Changed > 0 || (p.Unread && len(b.Recs) > 0) {
			if err := tx.unverify(ctx, verifiedAs(e.registry, b.Ent)); err != nil {
				return res, err
			}
		}
		counts.Add(b.Ent.Name, len(b.Recs), sv)
		res.Counts = counts.Counts
	}
	for _, r := range p.reread {
		n, err := e.concludeChildren(ctx, tx, r)
		if err != nil {
			return res, err
		}
		res.Deleted += n
	}
	if r := p.ranges; r != nil {
		for _, s := range r.steps {
			if err := tx.advanceRange(ctx, r.scope, r.pass, s.lo, s.cursor, s.done); err != nil {
				return res, err
			}
		}
		if err := tx.logPages(ctx, r.scope, e.runID, r.pass, r.pages, r.total, r.limited); err != nil {
			return res, err
		}
	}
	for _, l := range p.Log {
		for _, pg := range l.Pages {
			if err := tx.logPage(ctx, l.Entity, e.runID, pg); err != nil {
				return res, err
			}
		}
	}
	if p.then != nil {
		return res, p.then(ctx, tx)
	}
	return res, nil
}

// notePage logs the records of a stored page whose text was cleaned or refused, and counts
// those read in records_extracted_total.
func (e *Engine) notePage(p Page, res PageResult) {
	for i, b := range p.Records {
		e.noteSaved(b.Ent.Name, res.saved[i])
		if len(b.Recs) > 0 && !p.Unread {
			e.metrics.RecordsExtracted.WithLabelValues(b.Ent.Name).Add(float64(len(b.Recs)))
		}
	}
	if res.Deleted > 0 && len(p.Records) > 0 {
		e.metrics.Processed.WithLabelValues(p.Records[0].Ent.Name, string(DeletedAtSource)).Add(float64(res.Deleted))
		e.log.Info("children read again no longer on the portal: deleted at the source", "entity", p.Records[0].Ent.Name,
			"count", res.Deleted, "policy", e.deletions)
	}
}

// WithRefusal returns the record marked as one that cannot be migrated, for the reason given
// (the portal's refusal to show it, in words): SavePage stores it and moves it on to IMPORT_ERR
// with that reason, as it does a record whose payload carries one (MarkUnreachable).
func (in Incoming) WithRefusal(reason string) Incoming {
	in.refused = reason
	return in
}
