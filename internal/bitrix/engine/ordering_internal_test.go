package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/status"
)

// A declared ordering sorts a parent's children by the number in the part of their source ids it
// names (not as text: 9 before 10 before 100); the zero one leaves them in id order.
func TestOrderingSortsChildrenByIDPart(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	var recs []Incoming
	for _, id := range []string{"7:100", "7:9", "8:1", "7:10", "7:20"} {
		parent, _, _ := strings.Cut(id, ":")
		recs = append(recs, Incoming{sourceID: id, parent: parent, payload: json.RawMessage(`{}`), checksum: id})
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := NewStore(tx).insertRecords(ctx, "notes", recs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		order Ordering
		want  string
	}{
		{OrderByIDPart(2), "7:9 7:10 7:20 7:100"},
		{Ordering{}, "7:100 7:9 7:10 7:20"},
	} {
		ids, err := Machine.PickChildren(ctx, pool, status.ChildPick{ScopeValue: "notes", Column: "parent_source_id", Key: "7",
			Statuses: []status.Status{StatusNew}, Order: tc.order.sql()})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range ids {
			var sid string
			if err := pool.QueryRow(ctx, `SELECT source_id FROM bitrix_records WHERE id = $1`, id).Scan(&sid); err != nil {
				t.Fatal(err)
			}
			got = append(got, sid)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%+v: %s, want %s", tc.order, g, tc.want)
		}
	}
}

// The registry takes an ordering only for a child, and only one naming a part of the source id.
func TestRegistryChecksOrder(t *testing.T) {
	parent := func() *Entity { return &Entity{Name: "posts", Batch: 1, Lister: &IDScan{}} }
	for _, tc := range []struct {
		name  string
		order Ordering
		child bool
		err   string
	}{
		{"child in order", OrderByIDPart(2), true, ""},
		{"child in any order", Ordering{}, true, ""},
		{"top-level in order", OrderByIDPart(2), false, "only a child"},
		{"no part", OrderByIDPart(-1), true, "names no part"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ents := []*Entity{parent()}
			e := &Entity{Name: "notes", Batch: 1, Order: tc.order, Lister: &IDScan{}}
			if tc.child {
				e.Parent, e.Lister = "posts", nil
			}
			_, err := NewRegistry(append(ents, e)...)
			if got := fmt.Sprint(err); (tc.err == "") != (err == nil) || !strings.Contains(got, tc.err) {
				t.Errorf("NewRegistry: %v, want %q", err, tc.err)
			}
		})
	}
}
