package main

import (
	"context"
	"log/slog"
	"reflect"
	"slices"
	"strings"

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
	// commands is a go-arg destination holding the pipeline's own top-level subcommands
	// (`discover habr`, `bitrix ...`); nil when it has none.
	commands any
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

// sharedCommands is the parser's destination for the commands every pipeline takes part in,
// `status` and `show`, whose subcommands come from the pipelines (see sharedArgs).
type sharedCommands struct {
	dest any // *struct{ Status *<statusCmd + one subcommand per pipeline>; Show *<one per pipeline> }
}

// sharedArgs builds the destination of `status` and `show`: statusCmd's own fields and
// subcommands (set, ack) plus `status NAME` for every pipeline, and `show NAME` for every
// pipeline that shows records. go-arg reads subcommands from struct tags only, so the struct
// is built at run time.
func sharedArgs(ps []*pipeline) sharedCommands {
	var statusSubs, showSubs []subcommand
	for _, p := range ps {
		statusSubs = append(statusSubs, subcommand{name: p.name, help: p.statusHelp, typ: reflect.TypeFor[*struct{}]()})
		if p.show != nil {
			showSubs = append(showSubs, subcommand{name: p.name, help: p.showHelp, typ: reflect.TypeOf(p.show)})
		}
	}
	statusType := withSubcommands(reflect.TypeFor[statusCmd](), statusSubs)
	showType := withSubcommands(reflect.TypeFor[struct{}](), showSubs)
	root := reflect.StructOf([]reflect.StructField{
		{Name: "Status", Type: reflect.PointerTo(statusType),
			Tag: `arg:"subcommand:status" help:"record counts by status, failure reasons and last runs; status set fixes a status by hand"`},
		{Name: "Show", Type: reflect.PointerTo(showType), Tag: `arg:"subcommand:show" help:"one record: metadata, status history and content"`},
	})
	return sharedCommands{dest: reflect.New(root).Interface()}
}

// status returns the parsed `status` command, nil when the command line had none.
func (s sharedCommands) status() *statusCmd {
	v := reflect.ValueOf(s.dest).Elem().FieldByName("Status")
	if v.IsNil() {
		return nil
	}
	out := &statusCmd{}
	copyFields(reflect.ValueOf(out).Elem(), v.Elem())
	return out
}

// show returns the parsed `show NAME ...` command of the pipeline named, nil when none.
func (s sharedCommands) show(name string) showCommand {
	v := reflect.ValueOf(s.dest).Elem().FieldByName("Show")
	if v.IsNil() {
		return nil
	}
	f := v.Elem().FieldByName(subcommandField(name))
	if !f.IsValid() || f.IsNil() {
		return nil
	}
	return f.Interface().(showCommand)
}

// subcommand is one subcommand added to a struct type at run time.
type subcommand struct {
	name, help string
	typ        reflect.Type // a pointer to a struct
}

// withSubcommands returns a struct type with base's fields that go-arg reads and one
// subcommand field per entry.
func withSubcommands(base reflect.Type, subs []subcommand) reflect.Type {
	var fields []reflect.StructField
	for i := range base.NumField() {
		if f := base.Field(i); f.IsExported() && f.Tag.Get("arg") != "-" {
			fields = append(fields, f)
		}
	}
	for _, s := range subs {
		fields = append(fields, reflect.StructField{
			Name: subcommandField(s.name),
			Type: s.typ,
			Tag:  reflect.StructTag(`arg:"subcommand:` + s.name + `" help:"` + strings.ReplaceAll(s.help, `"`, `'`) + `"`),
		})
	}
	return reflect.StructOf(fields)
}

// subcommandField is the struct field that holds the subcommand name.
func subcommandField(name string) string {
	return "Sub_" + strings.NewReplacer("-", "_", ".", "_").Replace(name)
}

// copyFields copies the fields of src that dst has by the same name.
func copyFields(dst, src reflect.Value) {
	for i := range dst.NumField() {
		if f := src.FieldByName(dst.Type().Field(i).Name); f.IsValid() && dst.Field(i).CanSet() {
			dst.Field(i).Set(f)
		}
	}
}

// isGroup reports whether a parsed command is a group that needs one of its subcommands: its
// struct has subcommands, and it is not one of the commands whose subcommand is optional.
func isGroup(command string, dest any) bool {
	if dest == nil {
		return true // no command at all
	}
	if slices.Contains([]string{"migrate", "status"}, command) {
		return false
	}
	t := reflect.TypeOf(dest)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		if strings.Contains(t.Field(i).Tag.Get("arg"), "subcommand:") {
			return true
		}
	}
	return false
}
