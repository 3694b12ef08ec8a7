package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/ingest-dev/ingest/migrations"
)

func (app *app) migrateUp(ctx context.Context) error {
	n, err := migrations.Up(ctx, app.pool, app.log)
	if err != nil {
		return err
	}
	app.log.Info("migrations applied", "applied", n)
	return nil
}

func (app *app) migrateStatus(ctx context.Context) error {
	p, db, err := migrations.NewProvider(app.pool, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	w := tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tFILE\tSTATE\tAPPLIED AT")
	for _, m := range list {
		applied := ""
		if !m.AppliedAt.IsZero() {
			applied = m.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", m.Source.Version, m.Source.Path, m.State, applied)
	}
	// Versions a newer binary applied: listed too, and the schema refused like every other
	// command refuses it (exit 78), so that a script checking migrate status sees the problem.
	v, err := migrations.Check(ctx, app.pool)
	if err != nil {
		return err
	}
	if v.Database <= v.Binary {
		return w.Flush()
	}
	rows, err := app.pool.Query(ctx, `SELECT version_id, max(tstamp) FROM goose_db_version
WHERE version_id > $1 AND is_applied GROUP BY 1 ORDER BY 1`, v.Binary)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ver int64
		var at time.Time
		if err := rows.Scan(&ver, &at); err != nil {
			return fmt.Errorf("migration status: %w", err)
		}
		fmt.Fprintf(w, "%d\t(unknown to this binary)\tapplied\t%s\n", ver, at.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return configError{fmt.Sprintf("the database schema is at version %d, newer than this binary (ingest %s knows versions up to %d): run a newer ingest",
		v.Database, version, v.Binary)}
}
