package engine

import (
	"context"
	"testing"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

// TestStoredVerifyReportKeys: a verify report is stored with lower-case keys only, and one stored
// before ChildCounts.Summary had a JSON tag (under "Summary") still reads back with its summary,
// so the rows written by earlier versions need no migration.
func TestStoredVerifyReportKeys(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	const old = `{"entity": "things", "problems": [], "children": [{"entity": "thing_parts", "source": 3, "read": 3, "target": 3, "Summary": "parts"}]}`
	if _, err := pool.Exec(ctx, `INSERT INTO bitrix_inventory (entity, verify_report) VALUES ('things', $1)`, old); err != nil {
		t.Fatal(err)
	}
	s := NewStore(pool)
	inv, err := s.loadInventory(ctx, "things")
	if err != nil {
		t.Fatal(err)
	}
	if inv.LastVerify == nil {
		t.Fatal("the stored report did not read back")
	}
	c, ok := inv.LastVerify.Child("thing_parts")
	if !ok || c.Summary != "parts" || c.Read != 3 {
		t.Fatalf("the old report's child reads back as %+v (found: %v), want its summary \"parts\" and read 3", c, ok)
	}

	if err := s.saveVerify(ctx, "things", *inv.LastVerify); err != nil {
		t.Fatal(err)
	}
	var summary, oldKey *string
	err = pool.QueryRow(ctx, `SELECT verify_report->'children'->0->>'summary', verify_report->'children'->0->>'Summary'
FROM bitrix_inventory WHERE entity = 'things'`).Scan(&summary, &oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if summary == nil || *summary != "parts" || oldKey != nil {
		t.Fatalf("stored again, the child has summary %v and Summary %v, want \"parts\" under summary alone", storedKey(summary), storedKey(oldKey))
	}
}

// storedKey is a jsonb text value for a message: nil when the key is absent.
func storedKey(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
