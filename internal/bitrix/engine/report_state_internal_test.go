package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/pgsession"
	"github.com/ingest-dev/ingest/internal/status"
)

// noLister stands for a top-level entity's lister in a test that never reads the portal.
type noLister struct{}

func (noLister) Get(context.Context, *GetRun) error { return ErrNoTotal }
func (noLister) Total(context.Context, Env, *Entity) (int64, error) {
	return 0, ErrNoTotal
}
func (noLister) Plan(context.Context, Env, *Entity) ([]EntityPlan, error) { return nil, ErrNoTotal }

// TestReportStatesOfAVerifiedFamily: after a clean verify of a parent, every line of its family
// says verified, the child's by its parent's verify; the child's NEW records that wait for a
// parent accepted as a known exception are counted as such, with the parent's id; a pass is in
// progress only while a live run that touched it holds the entity's lock, interrupted otherwise.
func TestReportStatesOfAVerifiedFamily(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	reg, err := NewRegistry(
		&Entity{Name: "things", Lister: noLister{}, Batch: 10},
		&Entity{Name: "thing_parts", Parent: "things", Batch: 10},
		&Entity{Name: "thing_tags", Parent: "things", Batch: 10, Fetch: &ChildFetch{}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO bitrix_records (entity, source_id, parent_source_id, payload, checksum, status, acknowledged_at, acknowledged_by, acknowledged_reason) VALUES
 ('things', '1', NULL, '{}', 'c', 'IMPORT_ERR', now(), 'manual: alice', 'known'),
 ('things', '2', NULL, '{}', 'c', 'IMPORT_OK', NULL, NULL, NULL),
 ('thing_parts', '1:1', '1', '{}', 'c', 'NEW', NULL, NULL, NULL),
 ('thing_parts', '1:2', '1', '{}', 'c', 'NEW', NULL, NULL, NULL),
 ('thing_parts', '2:1', '2', '{}', 'c', 'IMPORT_OK', NULL, NULL, NULL),
 ('thing_tags', '2:a', '2', '{}', 'c', 'IMPORT_OK', NULL, NULL, NULL)`,
		`INSERT INTO bitrix_inventory (entity, pass, get_complete) VALUES ('things', 1, true), ('thing_parts', 1, true)`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewStore(pool).saveVerify(ctx, "things", VerifyReport{Entity: "things"}); err != nil {
		t.Fatal(err)
	}
	e := build(Config{Registry: reg, Pool: pool})
	report := func() map[string]EntityStatus {
		t.Helper()
		rep, err := e.Report(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]EntityStatus{}
		for _, es := range rep.Entities {
			out[es.Entity] = es
		}
		return out
	}
	rep := report()
	for _, name := range []string{"things", "thing_parts", "thing_tags"} {
		if es := rep[name]; !es.Verified || !strings.HasPrefix(es.VerifiedState(), "yes, ") {
			t.Errorf("%s verified = %v (%s), want yes after the family's clean verify", name, es.Verified, es.VerifiedState())
		}
	}
	if got := rep["thing_parts"].VerifiedState(); !strings.HasSuffix(got, "(with things)") {
		t.Errorf("child's VERIFIED = %q, want it to name the parent whose verify covers it", got)
	}
	w := rep["thing_parts"].Waiting
	if w == nil || w.Records != 2 || w.Excused != 2 || strings.Join(w.Parents, " ") != "1" {
		t.Errorf("thing_parts waiting = %+v, want 2 records, both excused, of parent 1", w)
	}
	if rep["things"].Waiting != nil || rep["thing_tags"].Waiting != nil {
		t.Errorf("waiting where nothing waits: %+v, %+v", rep["things"].Waiting, rep["thing_tags"].Waiting)
	}

	// A pass a run that ended left behind.
	if _, err := NewStore(pool).startPass(ctx, "things", 0); err != nil {
		t.Fatal(err)
	}
	// A live run of the entity, as a process records itself: its lock, then its run and claim.
	lock, err := status.AcquireLock(ctx, pool.Config().ConnConfig, "bitrix things")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release(ctx) }()
	var runID int64
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "INSERT INTO runs (command) VALUES ('bitrix things get') RETURNING id").Scan(&runID); err != nil {
			return err
		}
		return pgsession.Claim(ctx, tx, "bitrix things", runID)
	})
	if err != nil {
		t.Fatal(err)
	}
	if es := report()["things"]; es.GetRunID != 0 || !strings.Contains(es.PassState(), "interrupted") {
		t.Errorf("a pass no live run resumed = %q (run %d), want interrupted", es.PassState(), es.GetRunID)
	}
	// The live run's get begins: it resumes the pass.
	if err := NewStore(pool).touchPasses(ctx, reg.Family(reg.byName["things"])); err != nil {
		t.Fatal(err)
	}
	if es := report()["things"]; es.GetRunID != runID || !strings.Contains(es.PassState(), "in progress") {
		t.Errorf("a pass the live run reads = %q (run %d), want in progress by run %d", es.PassState(), es.GetRunID, runID)
	}
	// kill -9: the server frees the lock with the session.
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if es := report()["things"]; es.GetRunID != 0 || !strings.Contains(es.PassState(), "interrupted") {
		t.Errorf("a pass whose run is gone = %q (run %d), want interrupted", es.PassState(), es.GetRunID)
	}
}
