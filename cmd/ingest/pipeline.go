package main

import (
	"context"
	"log/slog"
	"slices"

	"github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// A pipeline is what the command line knows of one source of records. Each pipeline's wiring
// file (habr.go, bitrix.go) describes it in one value, and pipelines() lists them: the parser,
// --help, `status`, `show`, `status set`, `status ack`, the configuration checks and dispatch
// loop over that list, so a new pipeline is a wiring file and one line in pipelines().
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
	// commands are the pipeline's own top-level commands (`discover`, `bitrix`, ...).
	commands []*cliCommand
	// owns reports whether a complete command (subcommand names joined by spaces) is one the
	// pipeline runs; usage, if set, checks its arguments as the parser cannot (a usage error);
	// check validates its configuration before anything connects and registers its secrets;
	// run runs it.
	owns  func(command string) bool
	usage func(command string) error
	check func(command string, a *args, r *redact.Redactor) error
	run   func(ctx context.Context, app *app, command string) error
	// runNames lists the run names of its commands, for the last runs `ingest status NAME` shows.
	runNames func() []string
	// records lists what a command of the pipeline owns of its machines: the runs of that
	// command publish those records by status (ingest_records), and nothing else.
	records func(command string) []run.Owned
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

// ownedBy lists what command owns of the pipelines' machines (pipeline.records); nothing for a
// command no pipeline runs.
func ownedBy(ps []*pipeline, command string) []run.Owned {
	if p := pipelineOwning(ps, command); p != nil && p.records != nil {
		return p.records(command)
	}
	return nil
}

// publishFailedStart records in the metrics a run of command that could not start because the
// database could not be reached (run.PublishFailedStart): its completion moves, its last
// success stays. Commands that are not runs (status, show, migrate) publish nothing.
func publishFailedStart(ctx context.Context, command string, a args, ps []*pipeline, log *slog.Logger) {
	p := pipelineOwning(ps, command)
	if p == nil || p.runNames == nil || !slices.Contains(p.runNames(), command) {
		return
	}
	run.PublishFailedStart(ctx, run.Options{Command: command, Log: log.With("cmd", command),
		PushgatewayURL: a.PushgatewayURL, MetricsTextfile: a.MetricsTextfile})
}

// everyMachine is pipeline.records for pipelines whose every command owns every record of
// every machine.
func everyMachine(name string, machines []*status.Machine) func(string) []run.Owned {
	return func(string) []run.Owned {
		out := make([]run.Owned, len(machines))
		for i, m := range machines {
			out[i] = run.Owned{Source: name, Machine: m}
		}
		return out
	}
}

// pipelineOwning returns the pipeline that runs command, or nil.
func pipelineOwning(ps []*pipeline, command string) *pipeline {
	for _, p := range ps {
		if p.owns != nil && p.owns(command) {
			return p
		}
	}
	return nil
}

// commandTree builds the command line's tree: migrate, version, `status` (with set, ack and one
// subcommand per pipeline), `show` (one per pipeline that shows records), then every pipeline's
// own commands. It returns the `status` command's arguments, filled by the parse.
func commandTree(ps []*pipeline) (*cliCommand, *statusCmd) {
	st := &statusCmd{Set: &statusSetCmd{}, Ack: &statusAckCmd{}}
	status := &cliCommand{name: "status", help: "record counts by status, failure reasons and last runs; status set fixes a status by hand",
		options: st, runsAlone: true, subs: []*cliCommand{
			{name: "set", help: "move records to another status by hand (recorded with who, when and why)", options: st.Set},
			{name: "ack", help: "accept failed records as known exceptions (bitrix IMPORT_ERR): verify lists them apart and passes", options: st.Ack},
		}}
	show := &cliCommand{name: "show", help: "one record: metadata, status history and content"}
	for _, p := range ps {
		status.subs = append(status.subs, &cliCommand{name: p.name, help: p.statusHelp})
		if p.show != nil {
			show.subs = append(show.subs, &cliCommand{name: p.name, help: p.showHelp, options: p.show})
		}
	}
	root := &cliCommand{name: "ingest", subs: []*cliCommand{
		{name: "migrate", help: "apply (up, the default) or list (status) database migrations", runsAlone: true, subs: []*cliCommand{
			{name: "up", help: "apply every pending migration (the default)"},
			{name: "status", help: "list migrations and whether each is applied"},
		}},
		{name: "version", help: "print the version"},
		status, show,
	}}
	for _, p := range ps {
		root.subs = append(root.subs, p.commands...)
	}
	return root, st
}

// showOf returns the parsed `show NAME ...` command of the pipeline named, nil when none.
func showOf(ps []*pipeline, name string) showCommand {
	if p := pipelineNamed(ps, name); p != nil {
		return p.show
	}
	return nil
}
