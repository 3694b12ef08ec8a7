package main

import (
	"context"
	"fmt"

	"github.com/ingest-dev/ingest/migrations"
)

// checkSchema refuses to run a command that needs schema against a schema it was not built for,
// before any work and before a run is recorded: an older or fresh schema needs `ingest migrate` (every command
// but migrate itself would fail half-way with "relation does not exist"), and a newer one was
// migrated by a newer binary whose data this one may misread or damage (migrate up included:
// it cannot undo what it does not know).
func (app *app) checkSchema(ctx context.Context, need schemaNeed) error {
	v, err := migrations.Check(ctx, app.pool)
	if err != nil {
		return err
	}
	// migrate status only lists what this binary knows; it may still show a newer schema.
	if v.Database > v.Binary && need != schemaLists {
		return configError{fmt.Sprintf("the database schema is at version %d, newer than this binary (ingest %s knows versions up to %d): run a newer ingest",
			v.Database, version, v.Binary)}
	}
	if v.Pending && need == schemaCurrent {
		return configError{fmt.Sprintf("the database schema is at version %d, this binary needs version %d: run `ingest migrate` first",
			v.Database, v.Binary)}
	}
	return nil
}
