package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// A pipeline is what the command line knows of one source of records. Each pipeline's wiring
// file (habr.go, bitrix.go) describes it in one value, and pipelines() lists them: the parser,
// --help, `status`, `show`, `status set` and `status ack` loop over that list, and each of its
// commands carries its own behaviour (action), so a new pipeline is a wiring file and one line
// in pipelines().
type pipeline struct {
	// name is the SOURCE of `ingest status NAME` and `ingest show NAME ...`.
	name string
	// machines are its state machines; `status set` and `status ack` name one by its Name.
	machines []*status.Machine
	// statusHelp is the --help line of `ingest status NAME`.
	statusHelp string
	// entities, for machines whose records are named by entity and source id, lists the valid
	// --entity values of `status set` and `status ack`; nil otherwise.
	entities func() []string
	// show is `ingest show NAME ...`: a pointer to a go-arg struct; nil when there is nothing to
	// show. showHelp is its --help line.
	show     showCommand
	showHelp string
	// showOptions, if set, is show's go-arg destination when it is not show itself (withHelp).
	showOptions any
	// idHelp, if set, is how `status set --id` names the pipeline's records; entityHelp, if
	// set, gives examples of its --entity values.
	idHelp, entityHelp string
	// commands are the pipeline's own top-level commands (`discover`, `bitrix`, ...), each with
	// its behaviour.
	commands []*cliCommand
}

// runNames lists the run names of the pipeline's recorded commands (action.recorded), for the
// last runs `ingest status NAME` shows.
func (p *pipeline) runNames() []string {
	var out []string
	var walk func(words []string, cs []*cliCommand)
	walk = func(words []string, cs []*cliCommand) {
		for _, c := range cs {
			w := append(slices.Clone(words), c.name)
			if c.act != nil && c.act.recorded {
				out = append(out, strings.Join(w, " "))
			}
			walk(w, c.subs)
		}
	}
	walk(nil, p.commands)
	return out
}

// showCommand is a pipeline's `ingest show NAME ...`.
type showCommand interface {
	// check validates the arguments before anything connects; its error is a usage error.
	check() error
	show(ctx context.Context, app *app) error
}

// pipelines lists every pipeline, in report order. Each call builds new values: the parser
// fills their command structs.
func pipelines() []*pipeline {
	return []*pipeline{habrPipeline(), bitrixPipeline(), socialPipeline()}
}

// machinesOf lists the state machines of the pipelines, in report order.
func machinesOf(ps []*pipeline) []*status.Machine {
	var out []*status.Machine
	for _, p := range ps {
		out = append(out, p.machines...)
	}
	return out
}

// pipelineNamed returns the pipeline of that name, or nil.
func pipelineNamed(ps []*pipeline, name string) *pipeline {
	for _, p := range ps {
		if p.name == name {
			return p
		}
	}
	return nil
}

// publishFailedStart records in the metrics a run of command that could not start because the
// database could not be reached (run.PublishFailedStart): its completion moves, its last
// success stays. Commands that are not runs (status, show, migrate) publish nothing.
func publishFailedStart(ctx context.Context, command string, act *action, a args, log *slog.Logger) {
	if !act.recorded {
		return
	}
	run.PublishFailedStart(ctx, run.Options{Command: command, Log: log.With("cmd", command),
		PushgatewayURL: a.PushgatewayURL, MetricsTextfile: a.MetricsTextfile})
}

// everyMachine is action.records for the commands of pipelines whose every command owns every
// record of every machine.
func everyMachine(name string, machines []*status.Machine) func() []run.Owned {
	return func() []run.Owned {
		out := make([]run.Owned, len(machines))
		for i, m := range machines {
			out[i] = run.Owned{Source: name, Machine: m}
		}
		return out
	}
}

// commandTree builds the command line's tree: migrate, version, `status` (with set, ack and one
// subcommand per pipeline), `show` (one per pipeline that shows records), then every pipeline's
// own commands. It returns the `status` command's arguments, filled by the parse.
func commandTree(ps []*pipeline) (*cliCommand, *statusCmd) {
	st := &statusCmd{Set: &statusSetCmd{}, Ack: &statusAckCmd{}}
	status := &cliCommand{name: "status", help: "record counts by status, failure reasons and last runs; status set fixes a status by hand",
		options: st, act: &action{
			usage: func() error { return st.checkListing("status", machinesOf(ps)) },
			run:   func(ctx context.Context, app *app) error { return app.status(ctx, machinesOf(ps), nil, st) },
		}, subs: []*cliCommand{
			{name: "set", help: "move records to another status by hand (recorded with who, when and why)", options: withHelp(st.Set, statusSetHelp(ps)), act: &action{
				usage: func() error {
					if err := st.Set.check(ps); err != nil {
						return err
					}
					return checkEntity(ps, "status set", st.Set.Source, st.Set.Entity)
				},
				run: func(ctx context.Context, app *app) error { return app.statusSet(ctx, st.Set) },
			}},
			{name: "ack", help: "accept failed records as known exceptions (bitrix IMPORT_ERR): verify lists them apart and passes", options: st.Ack, act: &action{
				usage: func() error {
					if err := st.Ack.check(); err != nil {
						return err
					}
					return checkEntity(ps, "status ack", st.Ack.Source, st.Ack.Entity)
				},
				run: func(ctx context.Context, app *app) error { return app.statusAck(ctx, st.Ack) },
			}},
		}}
	show := &cliCommand{name: "show", help: "one record: metadata, status history and content"}
	for _, p := range ps {
		status.subs = append(status.subs, &cliCommand{name: p.name, help: p.statusHelp, act: &action{
			usage: func() error { return st.checkListing("status "+p.name, p.machines) },
			run:   func(ctx context.Context, app *app) error { return app.status(ctx, p.machines, p.runNames(), st) },
		}})
		if p.show != nil {
			opts := any(p.show)
			if p.showOptions != nil {
				opts = p.showOptions
			}
			show.subs = append(show.subs, &cliCommand{name: p.name, help: p.showHelp, options: opts,
				act: &action{usage: p.show.check, run: p.show.show}})
		}
	}
	migrateUp := &action{schema: schemaMigrates, run: func(ctx context.Context, app *app) error { return app.migrateUp(ctx) }}
	root := &cliCommand{name: "ingest", subs: []*cliCommand{
		{name: "migrate", help: "apply (up, the default) or list (status) database migrations", act: migrateUp, subs: []*cliCommand{
			{name: "up", help: "apply every pending migration (the default)", act: migrateUp},
			{name: "status", help: "list migrations and whether each is applied", act: &action{schema: schemaLists,
				run: func(ctx context.Context, app *app) error { return app.migrateStatus(ctx) }}},
		}},
		{name: "version", help: "print the version", act: &action{local: func(w io.Writer) { fmt.Fprintln(w, args{}.Version()) }}},
		status, show,
	}}
	for _, p := range ps {
		root.subs = append(root.subs, p.commands...)
	}
	return root, st
}

// statusSetHelp is the help of status set's --id and --entity: how each pipeline names its
// records and its entities.
func statusSetHelp(ps []*pipeline) map[string]string {
	var ids, entities []string
	for _, p := range ps {
		if p.idHelp != "" {
			ids = append(ids, p.name+": "+p.idHelp)
		}
		if p.entityHelp != "" {
			entities = append(entities, p.name+": "+p.entityHelp)
		}
	}
	return map[string]string{
		"IDs":    "records, space-separated; required. " + strings.Join(ids, "; "),
		"Entity": "the entity the --id values belong to, as ingest status lists them (" + strings.Join(entities, "; ") + ")",
	}
}
