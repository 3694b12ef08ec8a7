package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// pageFixture is an engine over a fresh database with a top-level entity "things" and its child
// "parts", whose VERIFIED flag is that of things.
type pageFixture struct {
	t             *testing.T
	ctx           context.Context
	pool          *pgxpool.Pool
	e             *Engine
	things, parts *Entity
}

func newPageFixture(t *testing.T) *pageFixture {
	things := &Entity{Name: "things", Lister: &OffsetPages{}, Batch: 50}
	parts := &Entity{Name: "parts", Parent: "things", Batch: 50}
	reg, err := NewRegistry(things, parts)
	if err != nil {
		t.Fatal(err)
	}
	pool := dbtest.Pool(t)
	e := build(Config{Registry: reg, Pool: pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New(), Actor: "test"})
	return &pageFixture{t: t, ctx: context.Background(), pool: pool, e: e, things: things, parts: parts}
}

// save stores the page in a transaction of SavePage's own.
func (f *pageFixture) save(p Page) (PageResult, error) {
	return f.e.env().SavePage(f.ctx, f.e.store(), p)
}

func (f *pageFixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.pool.Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatal(err)
	}
}

// setVerified sets the entity's VERIFIED flag, as a clean verify does.
func (f *pageFixture) setVerified(entity string) {
	f.t.Helper()
	if _, err := f.e.store().loadInventory(f.ctx, entity); err != nil {
		f.t.Fatal(err)
	}
	f.exec(`UPDATE bitrix_inventory SET verified = true WHERE entity = $1`, entity)
}

func (f *pageFixture) inventory(entity string) Inventory {
	f.t.Helper()
	inv, err := f.e.store().loadInventory(f.ctx, entity)
	if err != nil {
		f.t.Fatal(err)
	}
	return inv
}

func (f *pageFixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, sql, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// history is the status history of one record: "FROM>TO reason" per move, oldest first.
func (f *pageFixture) history(entity, sourceID string) []string {
	f.t.Helper()
	rows, err := f.pool.Query(f.ctx, `SELECT h.from_status || '>' || h.to_status || ' ' || h.reason FROM status_history h
JOIN bitrix_records r ON r.id = h.record_id WHERE h.machine = 'bitrix' AND r.entity = $1 AND r.source_id = $2 ORDER BY h.id`,
		entity, sourceID)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *pageFixture) extracted(entity string) float64 {
	return f.e.metrics.Snapshot()["records_extracted_total{entity="+entity+"}"]
}

func (f *pageFixture) rec(ent *Entity, id, payload string) Incoming {
	f.t.Helper()
	fields, err := FieldsOf(json.RawMessage(payload))
	if err != nil {
		f.t.Fatal(err)
	}
	in, err := NewIncoming(ent, id, "", json.RawMessage(payload), fields, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return in
}

func thingsLog(pass int, cursor, next string, n int) []PageLog {
	return []PageLog{{Entity: "things", Pages: []PageRecord{{Pass: pass, Cursor: cursor, Next: next, Count: n}}}}
}

// A page's records and its page log row are stored together, and the inventory's cursor moves
// past them; a page that fails anywhere (here its page log row, which Postgres refuses) leaves
// nothing of it: no record, no log row, the cursor and the VERIFIED flag as they were, nothing
// counted.
func TestSavePageStoresRecordsAndPageLogInOneTransaction(t *testing.T) {
	f := newPageFixture(t)
	f.setVerified("things")
	res, err := f.save(Page{Records: []EntityRecords{{f.things, []Incoming{f.rec(f.things, "1", `{"ID":"1"}`),
		f.rec(f.things, "2", `{"ID":"2"}`)}}}, Log: thingsLog(1, "0", "2", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Counts["things"]; c == nil || *c != (GetCounts{Rows: 2, Inserted: 2}) {
		t.Errorf("counts = %+v, want 2 rows inserted", c)
	}
	inv := f.inventory("things")
	if inv.Cursor != "2" || inv.PassRows != 2 || inv.Verified {
		t.Errorf("inventory after the page: cursor %q, pass_rows %d, verified %v; want 2, 2, false", inv.Cursor, inv.PassRows, inv.Verified)
	}
	if n := f.count(`SELECT count(*) FROM bitrix_page_log WHERE entity = 'things' AND cursor = '0' AND next_cursor = '2' AND count = 2`); n != 1 {
		t.Errorf("page log rows = %d, want 1", n)
	}
	if got := f.extracted("things"); got != 2 {
		t.Errorf("records_extracted_total = %v, want 2", got)
	}

	f.setVerified("things")
	_, err = f.save(Page{Records: []EntityRecords{{f.things, []Incoming{f.rec(f.things, "3", `{"ID":"3"}`)}}},
		Log: thingsLog(1, "2", "3\x00", 1)})
	if err == nil {
		t.Fatal("a page whose log row Postgres refuses was stored")
	}
	if n := f.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'things' AND source_id = '3'`); n != 0 {
		t.Error("the failed page's record is stored")
	}
	if n := f.count(`SELECT count(*) FROM bitrix_page_log WHERE entity = 'things'`); n != 1 {
		t.Errorf("page log rows = %d, want the first page's only", n)
	}
	inv = f.inventory("things")
	if inv.Cursor != "2" || inv.PassRows != 2 || !inv.Verified {
		t.Errorf("inventory after the failed page: cursor %q, pass_rows %d, verified %v; want 2, 2, true", inv.Cursor, inv.PassRows, inv.Verified)
	}
	if got := f.extracted("things"); got != 2 {
		t.Errorf("records_extracted_total = %v after the failed page, want 2", got)
	}

	// In the caller's transaction, the caller's failure undoes the page too.
	err = f.e.store().Tx(f.ctx, func(tx Store) error {
		if _, err := f.e.env().SavePage(f.ctx, tx, Page{Records: []EntityRecords{{f.things, []Incoming{f.rec(f.things, "4", `{"ID":"4"}`)}}},
			Log: thingsLog(1, "2", "4", 1)}); err != nil {
			return err
		}
		return errors.New("the caller's own write failed")
	})
	if err == nil {
		t.Fatal("the caller's failure was lost")
	}
	if n := f.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'things' AND source_id = '4'`); n != 0 {
		t.Error("the record of a page whose caller failed is stored")
	}
	if inv := f.inventory("things"); inv.Cursor != "2" || !inv.Verified {
		t.Errorf("inventory after the caller failed: cursor %q, verified %v; want 2, true", inv.Cursor, inv.Verified)
	}
}

// VERIFIED is cleared when a record of the page is new or changed (a child's clears its
// parent's), or when the page keeps records the portal refused to show (Unread); a page read
// again unchanged leaves it set. A changed record goes back to NEW with the page's reason.
func TestSavePageClearsVerifiedOnlyWhenSomethingChanged(t *testing.T) {
	f := newPageFixture(t)
	thing := func(payload string) Page {
		return Page{Records: []EntityRecords{{f.things, []Incoming{f.rec(f.things, "1", payload)}}}, Reason: "changed on the source (edited)"}
	}
	part := func(payload string) Page {
		return Page{Records: []EntityRecords{{f.parts, []Incoming{f.rec(f.parts, "1:1", payload)}}}}
	}
	for _, p := range []Page{thing(`{"ID":"1","N":"a"}`), part(`{"ID":"1","N":"a"}`)} {
		if _, err := f.save(p); err != nil {
			t.Fatal(err)
		}
	}
	f.exec(`UPDATE bitrix_records SET status = 'IMPORT_OK'`)
	unread := thing(`{"ID":"1","N":"b"}`)
	unread.Unread = true
	for _, c := range []struct {
		name      string
		page      Page
		cleared   bool
		extracted float64 // records_extracted_total of the page's entity, after it
	}{
		{"unchanged", thing(`{"ID":"1","N":"a"}`), false, 2},
		{"changed", thing(`{"ID":"1","N":"b"}`), true, 3},
		{"child unchanged", part(`{"ID":"1","N":"a"}`), false, 2},
		{"child changed", part(`{"ID":"1","N":"b"}`), true, 3},
		{"unread, unchanged", unread, true, 3},
		{"empty", Page{Records: []EntityRecords{{f.things, nil}}}, false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.t = t
			f.setVerified("things")
			f.setVerified("parts")
			if _, err := f.save(c.page); err != nil {
				t.Fatal(err)
			}
			if got := !f.inventory("things").Verified; got != c.cleared {
				t.Errorf("things' VERIFIED cleared = %v, want %v", got, c.cleared)
			}
			if !f.inventory("parts").Verified {
				t.Error("the child's own flag was cleared: its parent's covers it")
			}
			if got := f.extracted(c.page.Records[0].Ent.Name); got != c.extracted {
				t.Errorf("records_extracted_total = %v, want %v", got, c.extracted)
			}
		})
	}
	f.t = t
	want := []string{"IMPORT_OK>NEW changed on the source (edited)"}
	if got := f.history("things", "1"); len(got) != 1 || got[0] != want[0] {
		t.Errorf("history of the changed record = %q, want %q", got, want)
	}
}

// Records marked unreachable (in their payload, or with WithRefusal) are stored and moved on to
// IMPORT_ERR with their reason, once: read again unchanged, they are not refused again.
func TestSavePageRefusesUnreachableRecords(t *testing.T) {
	f := newPageFixture(t)
	marked := MustJSON(MarkUnreachable(map[string]json.RawMessage{"ID": MustJSON("2")}, "out of reach: refused"))
	page := Page{Records: []EntityRecords{{f.things, []Incoming{
		f.rec(f.things, "1", `{"ID":"1"}`),
		f.rec(f.things, "2", string(marked)),
		f.rec(f.things, "3", `{"ID":"3"}`).WithRefusal("out of reach: not a participant"),
	}}}}
	res, err := f.save(page)
	if err != nil {
		t.Fatal(err)
	}
	if res.Refused != 2 {
		t.Errorf("refused = %d, want 2", res.Refused)
	}
	rows := storedRows(t, f.pool, "things")
	for id, want := range map[string]string{"1": "NEW", "2": "IMPORT_ERR", "3": "IMPORT_ERR"} {
		if rows[id].status != want {
			t.Errorf("record %s is %s, want %s", id, rows[id].status, want)
		}
	}
	for id, want := range map[string]string{"2": "NEW>IMPORT_ERR out of reach: refused", "3": "NEW>IMPORT_ERR out of reach: not a participant"} {
		if got := f.history("things", id); len(got) != 1 || got[0] != want {
			t.Errorf("history of %s = %q, want %q", id, got, want)
		}
	}
	if res, err = f.save(page); err != nil || res.Refused != 0 {
		t.Errorf("the same page again refused %d (%v), want 0", res.Refused, err)
	}
	if got := f.history("things", "3"); len(got) != 1 {
		t.Errorf("history of 3 after the page again = %q, want the one refusal", got)
	}
}
