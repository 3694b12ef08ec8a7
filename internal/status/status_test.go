package status_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/status"
)

const (
	pending status.Status = "pending"
	done    status.Status = "done"
	failed  status.Status = "failed"
	broken  status.Status = "broken"
)

// things is a small machine shaped like the real pipelines': failures retry, broken needs a person.
var things = &status.Machine{
	Name:     "things",
	Table:    "things",
	Statuses: []status.Status{pending, done, failed, broken},
	Auto: []status.Transition{
		{pending, done}, {pending, failed}, {pending, broken},
		{failed, done}, {failed, failed}, {failed, broken},
	},
	Manual: []status.Transition{
		{broken, pending}, {failed, pending}, {done, pending},
	},
}

const thingsDDL = `CREATE TABLE things (
    id bigint PRIMARY KEY,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed', 'broken')),
    attempts integer NOT NULL DEFAULT 0,
    last_error text,
    status_changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX things_status_id_idx ON things (status, id);`

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	b := &testBundle{ctx: context.Background(), pool: dbtest.Pool(t)}
	if _, err := b.pool.Exec(b.ctx, thingsDDL); err != nil {
		t.Fatalf("create things: %v", err)
	}
	return b
}

// insert adds records 1..n in status s.
func (b *testBundle) insert(t testing.TB, from, to int64, s status.Status) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, `INSERT INTO things (id, status) SELECT g, $3 FROM generate_series($1::bigint, $2::bigint) g`, from, to, string(s))
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
}

func TestMachineTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to     status.Status
		auto, byHand bool
	}{
		{pending, done, true, false},
		{pending, failed, true, false},
		{failed, failed, true, false},
		{failed, pending, false, true},
		{broken, pending, false, true},
		{broken, done, false, false},
		{done, failed, false, false},
		{done, pending, false, true},
		{pending, pending, false, false},
	}
	for _, tt := range tests {
		if got := things.AllowsAuto(tt.from, tt.to); got != tt.auto {
			t.Errorf("AllowsAuto(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.auto)
		}
		if got := things.AllowsManual(tt.from, tt.to); got != tt.byHand {
			t.Errorf("AllowsManual(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.byHand)
		}
	}
	if _, err := things.Parse("bogus"); err == nil || !strings.Contains(err.Error(), "pending, done, failed, broken") {
		t.Errorf("Parse(bogus) = %v, want an error listing the valid statuses", err)
	}
}

func TestMoveIsGuardedByCurrentStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, 1, pending)

	moved, err := things.Move(b.ctx, b.pool, 1, pending, failed, status.Change{Reason: "HTTP 503", Actor: "test", Attempt: true})
	if err != nil || !moved {
		t.Fatalf("first move: moved=%v err=%v", moved, err)
	}
	// A late or repeated move from the old status changes nothing.
	moved, err = things.Move(b.ctx, b.pool, 1, pending, done, status.Change{Actor: "test", Attempt: true})
	if err != nil || moved {
		t.Fatalf("stale move: moved=%v err=%v, want no move and no error", moved, err)
	}
	var st, lastErr string
	var attempts int
	if err := b.pool.QueryRow(b.ctx, "SELECT status, attempts, last_error FROM things WHERE id = 1").Scan(&st, &attempts, &lastErr); err != nil {
		t.Fatal(err)
	}
	if st != "failed" || attempts != 1 || lastErr != "HTTP 503" {
		t.Errorf("record = (%s, %d, %q), want (failed, 1, HTTP 503)", st, attempts, lastErr)
	}
	// Success clears last_error.
	if moved, err := things.Move(b.ctx, b.pool, 1, failed, done, status.Change{Actor: "test", Attempt: true}); err != nil || !moved {
		t.Fatalf("retry success: moved=%v err=%v", moved, err)
	}
	var le *string
	if err := b.pool.QueryRow(b.ctx, "SELECT last_error FROM things WHERE id = 1").Scan(&le); err != nil || le != nil {
		t.Errorf("last_error after success = %v (err %v), want NULL", le, err)
	}
	hist, err := things.History(b.ctx, b.pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].To != failed || hist[0].Reason != "HTTP 503" || hist[1].To != done {
		t.Errorf("history = %+v, want pending->failed (HTTP 503), failed->done", hist)
	}
}

func TestMoveRefusesDisallowedTransition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, 1, broken)
	_, err := things.Move(b.ctx, b.pool, 1, broken, done, status.Change{Actor: "test"})
	if !errors.Is(err, status.ErrTransition) {
		t.Fatalf("broken -> done = %v, want ErrTransition", err)
	}
	// The database itself refuses a status the machine does not know.
	_, err = b.pool.Exec(b.ctx, "UPDATE things SET status = 'bogus' WHERE id = 1")
	if err == nil || !strings.Contains(err.Error(), "check constraint") {
		t.Fatalf("unknown status accepted by the database: %v", err)
	}
}

func TestPickByStatusKeyset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, 10, pending)
	b.insert(t, 11, 15, done)
	b.insert(t, 16, 20, failed)
	b.insert(t, 21, 25, broken)
	b.insert(t, 26, 30, pending)

	var all []int64
	var after int64
	for {
		ids, err := things.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{pending, failed}, After: after, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) == 0 {
			break
		}
		if len(ids) > 4 {
			t.Fatalf("batch of %d, want at most 4", len(ids))
		}
		all = append(all, ids...)
		after = ids[len(ids)-1]
	}
	var want []int64
	for i := int64(1); i <= 30; i++ {
		if i <= 10 || (i >= 16 && i <= 20) || i >= 26 {
			want = append(want, i)
		}
	}
	if !slices.Equal(all, want) {
		t.Errorf("picked %v, want %v (pending and failed only, in id order, each once)", all, want)
	}
}

func TestPickLargeBacklogUsesIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, 100_000, pending)
	b.insert(t, 100_001, 100_100, failed)
	if _, err := b.pool.Exec(b.ctx, "ANALYZE things"); err != nil {
		t.Fatal(err)
	}
	ids, err := things.Pick(b.ctx, b.pool, status.PickParams{Statuses: []status.Status{pending, failed}, After: 99_990, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 20 || ids[0] != 99_991 || ids[9] != 100_000 || ids[10] != 100_001 || ids[19] != 100_010 {
		t.Errorf("picked %v, want 99991..100000 then 100001..100010", ids)
	}
	// The plan must read index ranges, never scan or sort the whole backlog.
	rows, err := b.pool.Query(b.ctx, `EXPLAIN SELECT id FROM ((SELECT id FROM things WHERE status = 'pending' AND id > 0 ORDER BY id LIMIT 100)
UNION ALL (SELECT id FROM things WHERE status = 'failed' AND id > 0 ORDER BY id LIMIT 100)) p ORDER BY id LIMIT 100`)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if strings.Contains(text, "Seq Scan") || !strings.Contains(text, "things_status_id_idx") {
		t.Errorf("pick plan does not walk the (status, id) index:\n%s", text)
	}
}

func TestSetManual(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, 1, broken)
	b.insert(t, 2, 2, pending)
	b.insert(t, 3, 3, done)

	res, err := things.SetManual(b.ctx, b.pool, []int64{1, 2, 3, 99}, failed, "retry after fix", "manual: alice")
	if err != nil {
		t.Fatal(err)
	}
	// Only failed -> pending, broken -> pending, done -> pending are allowed by hand.
	for _, r := range res {
		if r.Err == nil {
			t.Errorf("record %d: moved %s -> failed by hand, want refusal", r.ID, r.From)
		}
	}
	if !errors.Is(res[3].Err, status.ErrNotFound) {
		t.Errorf("record 99: %v, want ErrNotFound", res[3].Err)
	}
	if !strings.Contains(res[0].Err.Error(), "you may move to: pending") {
		t.Errorf("refusal does not say what is allowed: %v", res[0].Err)
	}

	res, err = things.SetManual(b.ctx, b.pool, []int64{1, 2, 3}, pending, "fixed the selector", "manual: alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Errorf("record %d: %v", r.ID, r.Err)
		}
	}
	counts, err := things.Counts(b.ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	if counts[0].Status != pending || counts[0].N != 3 {
		t.Errorf("counts = %+v, want 3 pending", counts)
	}
	hist, err := things.History(b.ctx, b.pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].Actor != "manual: alice" || hist[0].Reason != "fixed the selector" || hist[0].From != broken {
		t.Errorf("history of 1 = %+v, want one manual broken->pending by alice", hist)
	}
	// Record 2 was already pending: nothing moved, nothing recorded.
	if hist, _ := things.History(b.ctx, b.pool, 2); len(hist) != 0 {
		t.Errorf("history of 2 = %+v, want none", hist)
	}
}

func TestTopReasons(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, 5, pending)
	for id, reason := range map[int64]string{1: "HTTP 503", 2: "HTTP 503", 3: "timeout", 4: "HTTP 503"} {
		if _, err := things.Move(b.ctx, b.pool, id, pending, failed, status.Change{Reason: reason, Actor: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := things.TopReasons(b.ctx, b.pool, []status.Status{failed, broken}, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []status.Reason{{failed, "HTTP 503", 3}, {failed, "timeout", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("TopReasons = %+v, want %+v", got, want)
	}
}

// A move reads its records by primary key even when the statistics say its from-status is
// empty (taken before a step filled it): the (status, id) index would read the status's whole
// range at every move, a cost growing with the backlog.
func TestMoveReadsByIDWithStaleStatistics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 1, 20_000, pending)
	if _, err := b.pool.Exec(b.ctx, "ANALYZE things"); err != nil {
		t.Fatal(err)
	}
	// Every record fails at once; the statistics still say none has.
	if _, err := b.pool.Exec(b.ctx, "UPDATE things SET status = 'failed'"); err != nil {
		t.Fatal(err)
	}
	conn, err := b.pool.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// statusEntriesRead is how many entries of the status index this database's scans read, as
	// the statistics have them once this session's counts are flushed.
	statusEntriesRead := func() int64 {
		t.Helper()
		if _, err := conn.Exec(b.ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := conn.QueryRow(b.ctx, `SELECT pg_stat_clear_snapshot(), idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'things_status_id_idx'`).Scan(nil, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := statusEntriesRead()
	moved, err := things.MoveMany(b.ctx, conn, []int64{5, 10, 15}, failed, done, status.Change{Reason: "ok", Actor: "test"})
	if err != nil || len(moved) != 3 {
		t.Fatalf("moved %v, %v; want 3", moved, err)
	}
	if read := statusEntriesRead() - before; read > 0 {
		t.Errorf("the move read %d entries of the status index, want none (it names its records by id)", read)
	}
}
