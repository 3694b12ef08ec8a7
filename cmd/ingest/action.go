package main

import (
	"context"
	"io"

	"github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/run"
)

// action is the behaviour of a command that runs, held by its node of the command tree: once
// the line is parsed, the command is its node, and nothing looks it up again by its words.
type action struct {
	// usage, if set, checks the arguments as the parser cannot, before anything connects; its
	// error is a usage error.
	usage func() error
	// config, if set, validates the configuration the command needs beyond the global options,
	// before anything connects, and registers its secrets with r.
	config func(a *args, r *redact.Redactor) error
	// local, if set, is the whole command: it needs no configuration and no database.
	local func(stdout io.Writer)
	// run does the command's work.
	run func(ctx context.Context, app *app) error
	// recorded marks a command whose work is a recorded run (run.Exec): a start the database
	// refused is published in its metrics too (publishFailedStart), and `ingest status NAME`
	// lists its last runs.
	recorded bool
	// records, if set, lists what the command's runs own of the pipelines' machines: they
	// publish those records by status (ingest_records), and nothing else.
	records func() []run.Owned
	// schema is what the command needs of the database schema.
	schema schemaNeed
}

// schemaNeed is what a command needs of the database schema (checkSchema).
type schemaNeed int

const (
	// schemaCurrent: the schema this binary was built for, neither older nor newer.
	schemaCurrent schemaNeed = iota
	// schemaMigrates: the command migrates it (migrate up): an older schema is what it is for;
	// its statements are not cut (an index built on a big table may take long).
	schemaMigrates
	// schemaLists: the command lists migrations (migrate status), whatever the version; its
	// statements are not cut either.
	schemaLists
)
