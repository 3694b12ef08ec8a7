package main

import (
	"context"
	"slices"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// bitrixMigrate is the command that migrates every entity in one process.
const bitrixMigrate = "bitrix migrate"

// bitrixLock is the lock of the Bitrix24 migration as a whole: every `bitrix ENTITY PHASE`
// holds it shared, `bitrix migrate` exclusive, so that the one-process migration never runs
// beside an entity command (two leaky buckets against one portal, two writers of one entity).
const bitrixLock = "bitrix"

// bitrixMigrateCmd is the arguments of `bitrix migrate`.
type bitrixMigrateCmd struct {
	Only string `arg:"--only" help:"migrate only these entities, comma-separated (in migration order whatever the order given)" placeholder:"E,..."`
	From string `arg:"--from" help:"start at this entity, leaving the ones before it alone" placeholder:"E"`
}

// options reads the flags as the engine takes them.
func (c *bitrixMigrateCmd) options() engine.MigrateOptions {
	var only []string
	for _, name := range strings.Split(c.Only, ",") {
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(only, name) {
			only = append(only, name)
		}
	}
	return engine.MigrateOptions{Only: only, From: strings.TrimSpace(c.From)}
}

// check refuses unknown entity names before anything connects, listing the valid ones.
func (c *bitrixMigrateCmd) check(reg *engine.Registry) error {
	o := c.options()
	if c.Only != "" && len(o.Only) == 0 {
		return usageError{"bitrix migrate --only: no entity named (valid: " + strings.Join(reg.CommandNames(), ", ") + ")"}
	}
	ents, err := reg.MigrateEntities(o)
	if err != nil {
		return usageError{"bitrix migrate: " + err.Error()}
	}
	if len(ents) == 0 {
		return usageError{"bitrix migrate: --only " + c.Only + " names no entity from " + o.From + " on"}
	}
	return nil
}

// bitrixMigrate runs the whole migration in this process: one portal client (one leaky
// bucket), one target client, under the pipeline's lock taken exclusive.
func (app *app) bitrixMigrate(ctx context.Context, c *bitrixCmd) error {
	also := []status.SetLock{{Name: bitrixLock}}
	// An entity command that lost its locks (frozen, cut off) writes nothing more once this
	// run has started.
	var fenceOut []string
	for _, name := range bitrix.Catalog().CommandNames() {
		fenceOut = append(fenceOut, "bitrix "+name)
	}
	return app.execLockSet(ctx, bitrixMigrate, bitrixMigrate, also, fenceOut, func(ctx context.Context, r *run.Run) error {
		e, err := app.bitrixEngine(c, r)
		if err != nil {
			return err
		}
		o := c.Migrate.options()
		o.Rate, _ = rest.ParseRate(c.Rate) // checked before the run
		return e.Migrate(ctx, o)
	})
}
