package dbtest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TemplatePrefix starts the name of every template database pgtestdb makes (a clone's name
// continues with "_inst_").
const TemplatePrefix = "testdb_tpl_"

// DropTemplates drops the template databases whose names start with prefix (TemplatePrefix for
// pgtestdb's) on the server at serverURL, and returns their names. It runs once every test
// process has ended (`make test`, scripts/drop-test-templates): a template is shared by every
// package's tests, so none of them may drop it. Databases kept by failed tests for inspection
// (clones, named prefix + "..._inst_...") are left alone.
func DropTemplates(ctx context.Context, serverURL, prefix string) ([]string, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil, fmt.Errorf("drop test templates: connect: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database
WHERE datistemplate AND starts_with(datname, $1) AND position('_inst_' in datname) = 0 ORDER BY 1`, prefix)
	if err != nil {
		return nil, fmt.Errorf("drop test templates: list: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("drop test templates: list: %w", err)
	}
	for _, name := range names {
		id := pgx.Identifier{name}.Sanitize()
		// A template cannot be dropped while it is one.
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+id+" IS_TEMPLATE false"); err != nil {
			return nil, fmt.Errorf("drop test template %s: %w", name, err)
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)"); err != nil {
			return nil, fmt.Errorf("drop test template %s: %w", name, err)
		}
	}
	return names, nil
}
