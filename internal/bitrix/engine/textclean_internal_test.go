package engine

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/status"
)

func incoming(t *testing.T, ent *Entity, id, payload string) Incoming {
	t.Helper()
	fields, err := FieldsOf(json.RawMessage(payload))
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewIncoming(ent, id, "", json.RawMessage(payload), fields, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

type storedRow struct {
	status, code, lastError string
	payload                 string
}

func storedRows(t *testing.T, db status.DB, entity string) map[string]storedRow {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT source_id, status, coalesce(reason_code, ''), coalesce(last_error, ''), payload::text
FROM bitrix_records WHERE entity = $1`, entity)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]storedRow{}
	for rows.Next() {
		var id string
		var r storedRow
		if err := rows.Scan(&id, &r.status, &r.code, &r.lastError, &r.payload); err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A page holding text Postgres cannot store (NUL, invalid UTF-8, a lone surrogate) is stored
// whole, cleaned, and a record Postgres refuses even cleaned (a number beyond numeric's range)
// fails alone: a stub in IMPORT_ERR with its reason code, the rest of the page stored. Reading
// the same page again changes nothing; the portal fixing the record sends it back to NEW.
func TestSavePageWithUnstorableText(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	ent := testUsers()
	page := func(big string) []Incoming {
		return []Incoming{
			incoming(t, ent, "1", `{"ID":"1","NAME":"Anna"}`),
			incoming(t, ent, "2", `{"ID":"2","NAME":"Bo\u0000b","WORK_POSITION":"x\ud800"}`),
			incoming(t, ent, "3", "{\"ID\":\"3\",\"NAME\":\"Cl\xffara\"}"),
			incoming(t, ent, "4", `{"ID":"4","UF_BIG":`+big+`}`),
			incoming(t, ent, "5", `{"ID":"5","NAME":"Dan"}`),
		}
	}
	save := func(recs []Incoming) Saved {
		t.Helper()
		var sv Saved
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			sv, err = NewStore(tx).saveRecords(ctx, ent.Name, recs, status.Change{Reason: "changed on the source"})
			return err
		})
		if err != nil {
			t.Fatalf("save: %v", err)
		}
		return sv
	}

	sv := save(page("1e1000000"))
	if sv.Inserted != 5 {
		t.Errorf("inserted %d, want 5", sv.Inserted)
	}
	cleaned := map[string]string{}
	for _, c := range sv.Cleaned {
		cleaned[c.SourceID] = strings.Join(slices.Sorted(slices.Values(pathsOf(c))), ",")
	}
	if want := map[string]string{"2": "$.NAME,$.WORK_POSITION", "3": "$.NAME"}; !maps.Equal(cleaned, want) {
		t.Errorf("cleaned %v, want %v", cleaned, want)
	}
	if len(sv.Unstorable) != 1 || sv.Unstorable[0].SourceID != "4" || !sv.Unstorable[0].Stored ||
		!strings.Contains(sv.Unstorable[0].Reason, "SQLSTATE 22003") {
		t.Errorf("unstorable %+v, want record 4 stored as a stub with SQLSTATE 22003", sv.Unstorable)
	}
	got := storedRows(t, pool, ent.Name)
	if len(got) != 5 {
		t.Fatalf("%d records stored, want 5: %v", len(got), got)
	}
	if p := got["2"].payload; !strings.Contains(p, `"NAME": "Bob"`) || !strings.Contains(p, `"x`+"\uFFFD"+`"`) || got["2"].status != string(StatusNew) {
		t.Errorf("record 2: %+v", got["2"])
	}
	if p := got["3"].payload; !strings.Contains(p, "Cl\uFFFDara") {
		t.Errorf("record 3: %+v", got["3"])
	}
	if r := got["4"]; r.status != string(ImportErr) || r.code != CodeUnstorable || !strings.Contains(r.lastError, "value overflows numeric format") ||
		!strings.Contains(r.payload, unstorableKey) {
		t.Errorf("record 4: %+v; want IMPORT_ERR, %s, the cause, a stub", r, CodeUnstorable)
	}
	var rec Record
	rec.Payload = json.RawMessage(got["4"].payload)
	if _, err := payloadFor(ent, rec, &Refs{}); err == nil {
		t.Error("set would send the stub of record 4")
	}

	// The same page again: nothing changed (the cleaned records' checksums are the cleaned text's).
	sv = save(page("1e1000000"))
	if sv.Inserted != 0 || sv.Changed != 0 || sv.Unchanged != 5 || len(sv.Unstorable) != 0 {
		t.Errorf("second read: %+v; want 5 unchanged", sv)
	}
	// The portal fixes record 4: it is stored and back in NEW.
	sv = save(page("1"))
	if sv.Changed != 1 || len(sv.Unstorable) != 0 {
		t.Errorf("fixed: %+v; want record 4 changed", sv)
	}
	if r := storedRows(t, pool, ent.Name)["4"]; r.status != string(StatusNew) || !strings.Contains(r.payload, `"UF_BIG": 1`) {
		t.Errorf("record 4 after the fix: %+v", r)
	}
	// And breaks it again, among changed records: the update of the others goes through.
	recs := page("1e1000000")
	recs[0] = incoming(t, ent, "1", `{"ID":"1","NAME":"Anna B"}`)
	sv = save(recs)
	if sv.Changed != 2 || len(sv.Unstorable) != 1 || sv.Unstorable[0].SourceID != "4" {
		t.Errorf("broken again: %+v", sv)
	}
	got = storedRows(t, pool, ent.Name)
	if got["4"].status != string(ImportErr) || got["4"].code != CodeUnstorable || !strings.Contains(got["1"].payload, "Anna B") {
		t.Errorf("after the second change: 1 %+v, 4 %+v", got["1"], got["4"])
	}
}

func pathsOf(c Cleaned) []string {
	out := make([]string, len(c.Changes))
	for i, ch := range c.Changes {
		out[i] = ch.Path
	}
	return out
}
