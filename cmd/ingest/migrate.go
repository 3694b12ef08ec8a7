package main

import (
	"context"
	"fmt"
	"text/tabwriter"

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
	return w.Flush()
}
