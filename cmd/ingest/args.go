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
	MetricsTextfile string `arg:"--metrics-textfile,env:METRICS_TEXTFILE" help:"write each run's metrics to this node-exporter textfile (*.prom)" placeholder:"PATH"`

	Migrate  *migrateCmd  `arg:"subcommand:migrate" help:"apply (up, the default) or list (status) database migrations"`
	Status   *statusCmd   `arg:"subcommand:status" help:"record counts by status, failure reasons and last runs; status set fixes a status by hand"`
	Show     *showCmd     `arg:"subcommand:show" help:"one record: metadata, status history and content"`
	Discover *discoverCmd `arg:"subcommand:discover" help:"register new publications from a source's feeds"`
	Extract  *extractCmd  `arg:"subcommand:extract" help:"extract the text of pending publications"`
	// Bitrix is parsed through a struct built from the entity registry (bitrixArgs), so that
	// every registered entity has its subcommand; Main copies it here.
	Bitrix     *bitrixCmd  `arg:"-"`
	VersionCmd *versionCmd `arg:"subcommand:version" help:"print the version"`
}

type migrateCmd struct {
	Up     *struct{} `arg:"subcommand:up" help:"apply every pending migration (the default)"`
	Status *struct{} `arg:"subcommand:status" help:"list migrations and whether each is applied"`
}

type statusCmd struct {
	JSON bool `arg:"--json" help:"print JSON instead of tables"`

	Habr   *struct{}     `arg:"subcommand:habr" help:"Habr publications only"`
	Bitrix *struct{}     `arg:"subcommand:bitrix" help:"Bitrix24 records only (ids for status set are the records' ids shown here and in verify reports)"`
	Set    *statusSetCmd `arg:"subcommand:set" help:"move records to another status by hand (recorded with who, when and why)"`
	Ack    *statusAckCmd `arg:"subcommand:ack" help:"accept failed records as known exceptions (bitrix IMPORT_ERR): verify lists them apart and passes"`
}

type statusAckCmd struct {
	Source string   `arg:"positional,required" help:"the pipeline: bitrix" placeholder:"SOURCE"`
	IDs    []string `arg:"--id" help:"records, space-separated; required: the portal's ids with --entity, or record ids without it" placeholder:"ID"`
	Entity string   `arg:"--entity" help:"the entity the --id values belong to" placeholder:"ENTITY"`
	Reason string   `arg:"--reason" help:"why this record may stay unmigrated; required, kept in the status history" placeholder:"TEXT"`
	By     string   `arg:"--by,env:USER" help:"who accepts it" placeholder:"NAME"`
}

type statusSetCmd struct {
	Source string   `arg:"positional,required" help:"the pipeline: habr or bitrix" placeholder:"SOURCE"`
	IDs    []string `arg:"--id" help:"records, space-separated; required. habr: article ids; bitrix: the portal's ids with --entity (e.g. --entity users --id 42 57), or record ids without it" placeholder:"ID"`
	Entity string   `arg:"--entity" help:"bitrix: the entity the --id values belong to (users, groups, group_members, chats, chat_messages)" placeholder:"ENTITY"`
	To     string   `arg:"--to" help:"the new status; required" placeholder:"STATUS"`
	Reason string   `arg:"--reason" help:"why: kept in the status history; required" placeholder:"TEXT"`
	By     string   `arg:"--by,env:USER" help:"who is making the change" placeholder:"NAME"`
}

type showCmd struct {
	Habr   *showHabrCmd   `arg:"subcommand:habr" help:"a Habr publication"`
	Bitrix *showBitrixCmd `arg:"subcommand:bitrix" help:"a Bitrix24 record, by entity and the portal's id"`
}

type showBitrixCmd struct {
	Entity string `arg:"positional,required" help:"users, groups, group_members, chats or chat_messages" placeholder:"ENTITY"`
	ID     string `arg:"positional,required" help:"the portal's id (group_members: GROUP:USER, chat_messages: CHAT:MESSAGE)" placeholder:"ID"`
	JSON   bool   `arg:"--json" help:"print JSON"`
}

type showHabrCmd struct {
	ID   int64 `arg:"positional,required" help:"Habr article id" placeholder:"ID"`
	JSON bool  `arg:"--json" help:"print JSON"`
}

type discoverCmd struct {
	Habr *discoverHabrCmd `arg:"subcommand:habr" help:"read Habr's RSS feeds (HABR_BASE_URL) and register new publications as extract_pending"`
}

type discoverHabrCmd struct {
	Feeds []string `arg:"--feed,separate,env:HABR_FEEDS" help:"a feed to read instead of the defaults (all articles and news, Russian and English): a path such as /ru/rss/hubs/go/articles/?fl=ru or an https://habr.com/... URL; repeat the flag, or separate them by commas in HABR_FEEDS" placeholder:"FEED"`
}

type extractCmd struct {
	Habr *struct{} `arg:"subcommand:habr" help:"extract Markdown for extract_pending publications, then extract_failed ones whose retry is due (seed 004; takes no parameters)"`
}

type versionCmd struct{}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func (args) Version() string { return "ingest " + version }

func (args) Description() string {
	return "ingest: batch ingestion into a Postgres state machine (Habr publications, Bitrix24 migration).\n" +
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
