package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// EachImported pages through the IMPORT_OK records of entity in id order, verifyChunk at a
// time, and calls fn with each page. The scan is by keyset (each page starts after the last id
// of the one before), so a page costs the same however large the table, and records imported
// meanwhile are not read twice. Verify's whole-target comparison, the entities' own checks and the field-link
// checks all read the imported records this way.
func (s Store) eachImported(ctx context.Context, entity string, fn func(recs []Record) error) error {
	for after := int64(0); ; {
		rows, err := s.db.Query(ctx, `SELECT `+recordColumns+` FROM bitrix_records WHERE entity = $1 AND status = $2 AND id > $3
ORDER BY id LIMIT $4`, entity, string(ImportOK), after, verifyChunk)
		if err != nil {
			return fmt.Errorf("verify %s: %w", entity, err)
		}
		recs, err := pgx.CollectRows(rows, scanRecord)
		if err != nil {
			return fmt.Errorf("verify %s: %w", entity, err)
		}
		if len(recs) == 0 {
			return nil
		}
		after = recs[len(recs)-1].ID
		if err := fn(recs); err != nil {
			return err
		}
	}
}
