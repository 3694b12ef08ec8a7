package main

import "fmt"

// args is the whole command line. Global options come from flags or the environment (flag
// wins); they may also be given after the subcommand.
type args struct {
	DatabaseURL     string `arg:"--database-url,env:DATABASE_URL" help:"Postgres connection URL (secret: never logged)" placeholder:"URL"`
	LogFormat       string `arg:"--log-format,env:LOG_FORMAT" default:"auto" help:"log format: auto (json unless stderr is a terminal), json or text" placeholder:"FORMAT"`
	LogLevel        string `arg:"--log-level,env:LOG_LEVEL" default:"info" help:"debug, info, warn or error" placeholder:"LEVEL"`
	PushgatewayURL  string `arg:"--pushgateway-url,env:PUSHGATEWAY_URL" help:"push each run's metrics to this Prometheus Pushgateway" placeholder:"URL"`
	HabrBaseURL     string `arg:"--habr-base-url,env:HABR_BASE_URL" default:"https://habr.com" help:"where Habr's feeds and pages are fetched from (a mirror or the local fake); stored links stay https://habr.com/..." placeholder:"URL"`
	MetricsTextfile string `arg:"--metrics-textfile,env:METRICS_TEXTFILE" help:"write each run's metrics to this node-exporter textfile (*.prom), or to ingest_COMMAND.prom in this directory" placeholder:"PATH"`
	// The commands are a tree of their own (commandTree), built from the pipelines.
}

// statusCmd is `ingest status`; commandTree adds `status NAME` for every pipeline. Set and Ack
// are the arguments of `status set` and `status ack`, parsed by those commands.
type statusCmd struct {
	JSON bool `arg:"--json" help:"print JSON instead of tables"`
	// Statuses and Limit choose the records listed by id: by default those that need attention.
	Statuses []string `arg:"--status" help:"list the records in these statuses by id, with their reasons, space-separated (default: those that need attention, e.g. extract_failed extract_broken)" placeholder:"STATUS"`
	Limit    int      `arg:"--limit" default:"20" help:"list at most this many groups of records by status and reason, and this many ids of each (0: every one); the counts stay exact" placeholder:"N"`

	Set *statusSetCmd `arg:"-"`
	Ack *statusAckCmd `arg:"-"`
}

type statusAckCmd struct {
	Source string   `arg:"positional,required" help:"the state machine of the records, as ingest status names it (bitrix)" placeholder:"SOURCE"`
	IDs    []string `arg:"--id" help:"records, space-separated; required: the portal's ids with --entity, or record ids without it" placeholder:"ID"`
	Entity string   `arg:"--entity" help:"the entity the --id values belong to, as ingest status lists them" placeholder:"ENTITY"`
	Reason string   `arg:"--reason" help:"why this record may stay unmigrated; required, kept in the status history" placeholder:"TEXT"`
	By     *string  `arg:"--by" help:"who accepts it; default $USER (an empty --by is refused)" placeholder:"NAME"`
}

// statusSetCmd is `status set`; the help of --id and --entity gives each pipeline's examples
// (statusSetHelp).
type statusSetCmd struct {
	Source string   `arg:"positional,required" help:"the state machine of the records, as ingest status names it (habr, bitrix, ...)" placeholder:"SOURCE"`
	IDs    []string `arg:"--id" help:"records, space-separated; required" placeholder:"ID"`
	Entity string   `arg:"--entity" help:"the entity the --id values belong to, as ingest status lists them" placeholder:"ENTITY"`
	To     string   `arg:"--to" help:"the new status; required" placeholder:"STATUS"`
	Reason string   `arg:"--reason" help:"why: kept in the status history; required" placeholder:"TEXT"`
	By     *string  `arg:"--by" help:"who is making the change; default $USER (an empty --by is refused)" placeholder:"NAME"`
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func (args) Version() string { return "ingest " + version }

func (args) Description() string {
	return "ingest: batch ingestion into a Postgres state machine: Habr publications (discover, extract),\n" +
		"the Bitrix24 migration (bitrix plan before the window, then bitrix ENTITY PHASE, bitrix status) and\n" +
		"social-account sync (social: Instagram accounts, sync, enrichment).\n" +
		"Every command is idempotent and safe to kill; rerun it to continue."
}

func (args) Epilogue() string {
	return fmt.Sprintf(`Exit codes:
  %d  success (including nothing to do)
  %d  the run failed (see the log)
  %d  usage error
  %d  another run of the same command holds the lock; try later
  %d  bad configuration
  %d  stopped by SIGINT; %d  stopped by SIGTERM (rerun to continue)

Run "ingest COMMAND --help" for a command's options.`,
		exitOK, exitFailed, exitUsage, exitLocked, exitConfig, exitSIGINT, exitSIGTERM)
}
