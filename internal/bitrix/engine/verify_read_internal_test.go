package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

// TestCountReadQueries: what verify counts of an entity the portal cannot count (CountRead)
// leaves out the records out of reach, by the entity's own field and by UnreachableKey, and
// subtracts only the readable ones a person acknowledged.
func TestCountReadQueries(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t)
	ctx := context.Background()
	ent := &Entity{Name: "rooms", OutOfReach: "refused"}
	for _, r := range []struct{ id, payload, status string }{
		{"1", `{}`, "IMPORT_OK"},
		{"2", `{}`, "NEW"},
		{"3", `{"refused": {"code": "ACCESS_ERROR"}}`, "IMPORT_ERR"},
		{"4", `{"` + UnreachableKey + `": "gone"}`, "IMPORT_ERR"},
		{"5", `{}`, "IMPORT_ERR"}, // acknowledged below
		{"6", `{}`, "IMPORT_ERR"},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum, status)
VALUES ('rooms', $1, $2, 'c', $3)`, r.id, r.payload, r.status); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum, status)
VALUES ('other', '9', '{}', 'c', 'NEW')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE bitrix_records SET acknowledged_at = now() WHERE entity = 'rooms' AND source_id IN ('3', '5')`); err != nil {
		t.Fatal(err)
	}
	st := NewStore(pool)
	if n, err := st.countReachable(ctx, ent); err != nil || n != 4 {
		t.Errorf("countReachable = %d, %v; want 4 (1, 2, 5, 6)", n, err)
	}
	if n, err := st.countExcusedReachable(ctx, ent); err != nil || n != 1 {
		t.Errorf("countExcusedReachable = %d, %v; want 1 (5: 3 is acknowledged but out of reach)", n, err)
	}
	issues, err := st.unimported(ctx, ent)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, i := range issues {
		ids = append(ids, i.SourceID+" "+i.Status)
	}
	if want := []string{"2 NEW", "6 IMPORT_ERR"}; !slices.Equal(ids, want) {
		t.Errorf("unimported = %q, want %q", ids, want)
	}
}
