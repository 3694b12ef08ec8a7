package bitrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/status"
)

// GetStats sums up a get.
type GetStats struct {
	// Resumed is set when the get continued an interrupted pass instead of starting one.
	Resumed bool
	// Pass is the pass the get worked on; Cursor is where it started.
	Pass   int
	Cursor string
	// Pages and Rows count what was read from the entity's listing.
	Pages, Rows int
	// Inserted, Changed and Unchanged count the entity's records by what storing them did.
	Inserted, Changed, Unchanged int
	// MembersNew, MembersChanged and MembersUnchanged count the memberships read with the
	// groups (groups only).
	MembersNew, MembersChanged, MembersUnchanged int
	// PulledUsers counts users fetched because a group within test_limit refers to them.
	PulledUsers int
	// Complete is set when the pass reached its end (or test_limit).
	Complete bool
}

// errLimitReached stops a listing once test_limit records are stored.
var errLimitReached = errors.New("test_limit reached")

// Get reads the entity from the source into bitrix_records (seed 000 "<entity>-get"): ID-keyed
// pages chained 50 to a batch, each page stored in one transaction together with its PageLog row
// and the inventory's cursor. An interrupted get resumes after the last stored page; a get after
// a complete pass starts a new one, which finds the records changed since. For groups, every
// page also brings the memberships of its groups (seed 001 "Участники (inline)").
//
// With TestLimit, only the first TestLimit records of the entity are read; for groups their
// memberships come along, and the users they refer to that are not stored yet.
func (e *Engine) Get(ctx context.Context, entity string) (GetStats, error) {
	k, err := lookup(entity)
	if err != nil {
		return GetStats{}, err
	}
	defer e.Metrics.Phase(k.name, "get")()
	zone, err := e.sourceZone(ctx, k)
	if err != nil {
		return GetStats{}, err
	}
	inv, err := loadInventory(ctx, e.Pool, k.name)
	if err != nil {
		return GetStats{}, err
	}
	st := GetStats{Resumed: inv.Pass > 0 && !inv.Complete}
	if st.Resumed {
		e.Log.Info("resuming an interrupted get from the page log", "entity", k.name, "pass", inv.Pass,
			"after_id", inv.Cursor, "rows_so_far", inv.PassRows)
	} else {
		if inv, err = startPass(ctx, e.Pool, k.name, e.TestLimit); err != nil {
			return st, err
		}
		e.Log.Info("get started", "entity", k.name, "pass", inv.Pass, "test_limit", e.TestLimit)
	}
	st.Pass, st.Cursor = inv.Pass, inv.Cursor

	g := &getter{ctx: ctx, e: e, k: k, zone: zone, st: &st, pass: inv.Pass, before: inv.PassRows, start: e.now()}
	err = e.Source.ListByID(ctx, k.scan, inv.Cursor, g.page)
	if errors.Is(err, errLimitReached) {
		err = nil
	}
	if err != nil {
		return st, fmt.Errorf("get %s: %w", k.name, err)
	}
	e.Log.Info("get done", "entity", k.name, "pass", st.Pass, "rows", st.Rows, "new", st.Inserted,
		"changed", st.Changed, "unchanged", st.Unchanged, "members_new", st.MembersNew,
		"members_changed", st.MembersChanged, "pulled_users", st.PulledUsers, "complete", st.Complete)
	return st, nil
}

// getter stores the pages of one get; it lives for one call of Get, whose ctx it carries
// because the listing's callback has none.
type getter struct {
	ctx    context.Context
	e      *Engine
	k      kind
	zone   *time.Location
	st     *GetStats
	pass   int
	before int64 // rows of the pass stored before this get
	total  *int64
	start  time.Time
}

func (g *getter) page(p rest.Page) error {
	ctx := g.ctx
	rows := p.Rows
	last := p.Last
	limited := false
	if lim := g.e.TestLimit; lim > 0 {
		left := int64(lim) - g.before - int64(g.st.Rows)
		if int64(len(rows)) >= left {
			rows, last, limited = rows[:max(left, 0)], true, true
		}
	}
	if g.total == nil && p.Total >= 0 {
		t := g.before + int64(p.Total)
		g.total = &t
	}
	recs, ids, err := g.decode(rows)
	if err != nil {
		return err
	}
	next := p.Next
	if len(ids) > 0 {
		next = ids[len(ids)-1]
	}

	var members []incoming
	var users []incoming
	if g.k.name == Groups {
		if members, err = g.e.fetchMembers(ctx, ids, g.zone); err != nil {
			return err
		}
		if g.e.TestLimit > 0 {
			if users, err = g.e.pullUsers(ctx, recs, members, g.zone); err != nil {
				return err
			}
		}
	}

	change := status.Change{Reason: "changed on the source", Actor: g.e.Actor, RunID: g.e.RunID}
	var got, gotMembers, gotUsers saved
	err = pgx.BeginFunc(ctx, g.e.Pool, func(tx pgx.Tx) error {
		var err error
		if got, err = saveRecords(ctx, tx, g.k.name, recs, change); err != nil {
			return err
		}
		if gotMembers, err = saveRecords(ctx, tx, GroupMembers, members, change); err != nil {
			return err
		}
		if gotUsers, err = saveRecords(ctx, tx, Users, users, change); err != nil {
			return err
		}
		if got.inserted+got.changed+gotMembers.inserted+gotMembers.changed > 0 {
			if err := unverify(ctx, tx, g.k.name); err != nil {
				return err
			}
		}
		if gotUsers.inserted+gotUsers.changed > 0 {
			if err := unverify(ctx, tx, Users); err != nil {
				return err
			}
		}
		return logPage(ctx, tx, g.k.name, g.e.RunID, pageRecord{pass: g.pass, cursor: p.Cursor, next: next,
			count: len(recs), total: g.total, last: last})
	})
	if err != nil {
		return err
	}

	g.st.Pages++
	g.st.Rows += len(recs)
	g.st.Inserted += got.inserted
	g.st.Changed += got.changed
	g.st.Unchanged += got.unchanged
	g.st.MembersNew += gotMembers.inserted
	g.st.MembersChanged += gotMembers.changed
	g.st.MembersUnchanged += gotMembers.unchanged
	g.st.PulledUsers += gotUsers.inserted
	g.st.Complete = last
	g.e.Metrics.RecordsExtracted.WithLabelValues(g.k.name).Add(float64(len(recs)))
	if len(members) > 0 {
		g.e.Metrics.RecordsExtracted.WithLabelValues(GroupMembers).Add(float64(len(members)))
	}
	if len(users) > 0 {
		g.e.Metrics.RecordsExtracted.WithLabelValues(Users).Add(float64(len(users)))
	}
	// One line per batch of the listing (50 pages), and for the last page.
	if g.st.Pages%rest.MaxBatch == 1 || last {
		g.e.progress("get", g.k.name, g.before+int64(g.st.Rows), g.total, g.st.Rows, g.start)
	}
	if limited {
		return errLimitReached
	}
	return nil
}

// decode prepares the rows of a page and returns their source ids, in order.
func (g *getter) decode(rows []json.RawMessage) ([]incoming, []string, error) {
	recs := make([]incoming, 0, len(rows))
	ids := make([]string, 0, len(rows))
	for _, row := range rows {
		fields, err := fieldsOf(row)
		if err != nil {
			return nil, nil, fmt.Errorf("get %s: %w", g.k.name, err)
		}
		id := text(fields, "ID")
		if id == "" {
			return nil, nil, fmt.Errorf("get %s: row without ID: %.200s", g.k.name, row)
		}
		in, err := newIncoming(g.k, id, "", row, fields, g.zone)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, in)
		ids = append(ids, id)
	}
	return recs, ids, nil
}
