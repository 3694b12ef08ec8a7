package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// countedEngine is an engine over a fresh database and the fake target, migrating reg.
func countedEngine(t *testing.T, reg *Registry) (*Engine, *targetfake.Server) {
	t.Helper()
	target := targetfake.New(targetfake.Options{})
	srv := httptest.NewServer(target)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL + "/api/v1/")
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("import", target.Token())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := importapi.New(u.String(), importapi.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return build(Config{Registry: reg, Pool: dbtest.Pool(t), Target: client, Log: log}), target
}

// storeRecords stores records of entity (source id, parent, payload) and sets their status.
func storeRecords(t *testing.T, pool *pgxpool.Pool, entity string, st status.Status, recs ...[3]string) {
	t.Helper()
	ctx := context.Background()
	in := make([]Incoming, len(recs))
	for i, r := range recs {
		in[i] = Incoming{sourceID: r[0], parent: r[1], payload: json.RawMessage(r[2]), checksum: r[0]}
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := NewStore(tx).insertRecords(ctx, entity, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE bitrix_records SET status = $1 WHERE entity = $2 AND status = $3`, string(st), entity, string(StatusNew)); err != nil {
		t.Fatal(err)
	}
}

// A counted child is compared parent by parent with the portal's count, asked only for the
// parents the webhook's user can read: a parent behind is listed, one the portal no longer shows
// is a problem, and the child's statuses, excused records and target count are its own.
func TestVerifyCountedChild(t *testing.T) {
	var asked []string
	portal := map[string]int64{"p1": 2, "p2": 3}
	posts := &Entity{Name: "posts", Batch: 1, Lister: &IDScan{}, OutOfReach: "hidden"}
	notes := &Entity{Name: "notes", Parent: "posts", Batch: 1, ChildCount: &PortalCount{Summary: "notes",
		Count: func(_ context.Context, _ Env, parents []string, fn func(ParentCount)) error {
			asked = parents
			for _, p := range parents {
				if n, ok := portal[p]; ok {
					fn(ParentCount{Parent: p, Count: n})
				} else {
					fn(ParentCount{Parent: p, Gone: &Unreachable{Code: "ACCESS_DENIED"}})
				}
			}
			return nil
		}}}
	reg, err := NewRegistry(posts, notes)
	if err != nil {
		t.Fatal(err)
	}
	e, target := countedEngine(t, reg)
	ctx := context.Background()
	storeRecords(t, e.pool, "posts", ImportOK, [3]string{"p1", "", `{}`}, [3]string{"p2", "", `{}`},
		[3]string{"p3", "", `{"hidden": {"code": "ACCESS_DENIED"}}`}, [3]string{"p4", "", `{"_unreachable": "withheld"}`},
		[3]string{"p5", "", `{}`})
	storeRecords(t, e.pool, "notes", ImportOK, [3]string{"p1:1", "p1", `{}`}, [3]string{"p1:2", "p1", `{}`})
	storeRecords(t, e.pool, "notes", ImportErr, [3]string{"p2:1", "p2", `{}`})
	storeRecords(t, e.pool, "notes", StatusNew, [3]string{"p3:1", "p3", `{}`})
	if _, err := e.pool.Exec(ctx, `UPDATE bitrix_records SET acknowledged_at = now() WHERE entity = 'posts' AND source_id = 'p3'`); err != nil {
		t.Fatal(err)
	}
	target.Put("notes", "notes:p1:1", json.RawMessage(`{}`))

	var r VerifyReport
	if err := e.verifyCountedChild(ctx, notes, &r); err != nil {
		t.Fatal(err)
	}
	if want := []string{"p1", "p2", "p5"}; !slices.Equal(asked, want) {
		t.Errorf("asked the portal for %v, want the readable parents %v", asked, want)
	}
	m, ok := r.Child("notes")
	if !ok {
		t.Fatalf("no counts of notes in %+v", r)
	}
	if m.Source != 5 || m.Read != 4 || m.Excused != 1 || m.Target != 1 || m.ByStatus[string(ImportOK)] != 2 || m.Summary != "notes" {
		t.Errorf("counts %+v, want 5 on the portal, 4 read, 1 excused, 1 on the target, 2 imported", m)
	}
	if want := []ParentCounts{{Parent: "p2", Source: 3, Read: 1, Target: -1}}; !slices.EqualFunc(m.Short, want, func(a, b ParentCounts) bool {
		return a.Parent == b.Parent && a.Source == b.Source && a.Read == b.Read && a.Target == b.Target
	}) {
		t.Errorf("short %+v, want %+v", m.Short, want)
	}
	if len(m.NotImported) != 1 || m.NotImported[0].SourceID != "p2:1" {
		t.Errorf("not imported %+v, want p2:1 alone (p3:1 waits for an acknowledged post)", m.NotImported)
	}
	for _, want := range []string{"post p5 can no longer be read (ACCESS_DENIED)", "1 posts have more notes on the portal than were read",
		"target holds 1 notes, 4 were read (1 of them excused)", "1 notes are not IMPORT_OK"} {
		if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("problems %q lack %q", r.Problems, want)
		}
	}
	if len(r.Problems) != 4 {
		t.Errorf("problems %q, want 4", r.Problems)
	}
}

// A listed reference's ids are counted record by record, those without a target id listed by
// record; records out of reach, acknowledged ones and a field that holds no list count nothing.
func TestVerifyListCoverage(t *testing.T) {
	readers := Ref{Field: "readers", Name: "readers", Entity: "people", Listed: true,
		Values: func(map[string]json.RawMessage) []string { return nil }}
	people := &Entity{Name: "people", Batch: 1, Lister: &IDScan{}}
	posts := &Entity{Name: "posts", Batch: 1, Lister: &IDScan{}, OutOfReach: "hidden", Refs: []Ref{readers}}
	reg, err := NewRegistry(people, posts)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := countedEngine(t, reg)
	ctx := context.Background()
	storeRecords(t, e.pool, "posts", ImportOK,
		[3]string{"p1", "", `{"readers": ["10", "2", "1"]}`},
		[3]string{"p2", "", `{"readers": ["3"], "hidden": true}`},
		[3]string{"p3", "", `{"readers": "7"}`},
		[3]string{"p4", "", `{"readers": ["2"]}`},
		[3]string{"p5", "", `{"readers": ["4"]}`})
	if _, err := e.pool.Exec(ctx, `UPDATE bitrix_records SET acknowledged_at = now() WHERE source_id = 'p5';
INSERT INTO bitrix_id_map (entity, source_id, target_id, checksum) VALUES ('people', '1', 't1', ''), ('people', '10', 't10', '')`); err != nil {
		t.Fatal(err)
	}
	var r VerifyReport
	if err := e.verifyListCoverage(ctx, posts, readers, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.References) != 1 {
		t.Fatalf("references %+v, want one", r.References)
	}
	c := r.References[0]
	if c.Entity != "posts" || c.Field != "readers" || c.Refers != "people" || c.Total != 4 || c.Mapped != 2 {
		t.Errorf("coverage %+v, want 4 readers, 2 mapped", c)
	}
	if len(c.Unmapped) != 2 || c.Unmapped[0].SourceID != "p1" || !slices.Equal(c.Unmapped[0].Values, []string{"2"}) ||
		c.Unmapped[1].SourceID != "p4" {
		t.Errorf("unmapped %+v, want 2 of p1 and 2 of p4", c.Unmapped)
	}
	if want := []string{"2 of 4 post readers have no target id (people not imported)"}; !slices.Equal(r.Problems, want) {
		t.Errorf("problems %q, want %q", r.Problems, want)
	}
}

// An entity's Untranslated hook sees every imported record of the family with what it refers to,
// and each value it names is listed by record; records not imported are not asked about.
func TestVerifyListsUntranslatedValues(t *testing.T) {
	people := &Entity{Name: "people", Batch: 1, Lister: &IDScan{}}
	posts := &Entity{Name: "posts", Batch: 1, Lister: &IDScan{},
		Refs: []Ref{{Field: "owner", Entity: "people", Optional: true}},
		Untranslated: func(fields map[string]json.RawMessage, rf *Refs) []string {
			if id := Text(fields, "owner"); id != "" {
				if _, ok := rf.Target("people", id); !ok {
					return []string{"owner " + id + " kept as on the portal"}
				}
			}
			return nil
		}}
	reg, err := NewRegistry(people, posts)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := countedEngine(t, reg)
	ctx := context.Background()
	storeRecords(t, e.pool, "posts", ImportOK, [3]string{"p1", "", `{"owner": "1"}`}, [3]string{"p2", "", `{"owner": "2"}`},
		[3]string{"p3", "", `{}`})
	storeRecords(t, e.pool, "posts", StatusNew, [3]string{"p4", "", `{"owner": "3"}`})
	if _, err := e.pool.Exec(ctx, `INSERT INTO bitrix_id_map (entity, source_id, target_id, checksum) VALUES ('people', '1', 't1', '')`); err != nil {
		t.Fatal(err)
	}
	var r VerifyReport
	if err := e.untranslatedValues(ctx, reg.Family(posts), &r); err != nil {
		t.Fatal(err)
	}
	if r.UntranslatedCount != 1 || len(r.Untranslated) != 1 || r.Untranslated[0].SourceID != "p2" ||
		r.Untranslated[0].Reason != "owner 2 kept as on the portal" || r.Untranslated[0].Status != string(ImportOK) {
		t.Errorf("untranslated %d %+v, want p2's owner alone", r.UntranslatedCount, r.Untranslated)
	}
}

// The registry takes a ChildCount only on a child read without a lister of its own, with its
// Count.
func TestRegistryChecksChildCount(t *testing.T) {
	count := func(context.Context, Env, []string, func(ParentCount)) error { return nil }
	for _, tc := range []struct {
		name  string
		child bool
		pc    *PortalCount
		ok    bool
	}{
		{"child", true, &PortalCount{Count: count}, true},
		{"top-level", false, &PortalCount{Count: count}, false},
		{"no count", true, &PortalCount{Summary: "notes"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Entity{Name: "notes", Batch: 1, Lister: &IDScan{}, ChildCount: tc.pc}
			if tc.child {
				e.Parent, e.Lister = "posts", nil
			}
			_, err := NewRegistry(&Entity{Name: "posts", Batch: 1, Lister: &IDScan{}}, e)
			if (err == nil) != tc.ok {
				t.Errorf("NewRegistry: %v, want ok = %v", err, tc.ok)
			}
		})
	}
}
