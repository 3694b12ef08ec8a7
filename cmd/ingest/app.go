package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/pgsession"
	"github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// app is what every command shares: validated configuration, the logger and the pool.
type app struct {
	args           args
	pipelines      []*pipeline
	stdout, stderr io.Writer
	log            *slog.Logger
	redactor       *redact.Redactor
	pool           *pgxpool.Pool
	// fence makes the pool's connections work for the run this process records (run.Options).
	fence *pgsession.Fence
	// records is what the command line's command owns of the machines: the runs it makes
	// publish those records (action.records).
	records []run.Owned
}

// configError is a configuration problem found before any work starts (exit 78).
type configError struct{ msg string }

func (e configError) Error() string { return e.msg }

// usageError is a command line the parser accepted but the command cannot use (exit 2); it is
// found before anything connects.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// configPrefix starts every configuration error line, so it reads the same whatever reports it.
const configPrefix = "configuration: "

// newApp validates the configuration and connects. On failure it logs why and returns the exit
// code: 78 for configuration the server refused (wrong password, no such database or role), 1
// for a server that cannot be reached (the next run may find it back).
func newApp(ctx context.Context, command string, act *action, a args, ps []*pipeline, stdout, stderr io.Writer) (*app, int) {
	r := redact.New()
	log, err := newLogger(stderr, a.LogFormat, a.LogLevel, r)
	if err != nil {
		fallbackLogger(stderr, a.LogFormat, r).Error(configPrefix+err.Error(), "exit_code", exitConfig)
		return nil, exitConfig
	}
	if err := validate(act, &a, r); err != nil {
		log.Error(configPrefix+r.String(err.Error()), "exit_code", exitConfig)
		return nil, exitConfig
	}
	cfg, _ := pgxpool.ParseConfig(a.DatabaseURL) // validated above
	cfg.ConnConfig.RuntimeParams["application_name"] = "ingest"
	fence := &pgsession.Fence{}
	pgsession.ConfigurePool(cfg, boundsFor(act.schema), fence)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	timeout := connectTimeout(cfg)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err = pool.Ping(pctx)
		cancel()
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		if msg, refused := refusedConnection(err, cfg); refused {
			log.Error(configPrefix+msg, "database", describeDB(cfg), "exit_code", exitConfig)
			return nil, exitConfig
		}
		msg := "cannot connect to Postgres"
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// A server that accepts the connection and never answers gives only the deadline:
			// say whose deadline it was, how long, and where.
			msg = fmt.Sprintf("cannot connect to Postgres: %s did not answer within the connect timeout (%s; connect_timeout in DATABASE_URL changes it)", describeHost(cfg), timeout)
		}
		log.Error(msg, "database", describeDB(cfg), "error", err, "exit_code", exitFailed)
		publishFailedStart(ctx, command, act, a, log)
		return nil, exitFailed
	}
	var records []run.Owned
	if act.records != nil {
		records = act.records()
	}
	return &app{args: a, pipelines: ps, stdout: stdout, stderr: stderr, log: log, redactor: r, pool: pool, fence: fence, records: records}, exitOK
}

// boundsFor is the session bounds of the connections of a command that needs schema: every
// command's, but a migration's statements are not cut (an index built on a big table may take
// long; lock_timeout still keeps it from queueing every run behind it for long).
func boundsFor(schema schemaNeed) pgsession.Bounds {
	b := pgsession.Defaults()
	if schema != schemaCurrent {
		b.Statement = 0
	}
	return b
}

// validate checks the configuration a command needs before any work starts and registers its
// secrets with r: the global options, then the command's own (action.config).
func validate(act *action, a *args, r *redact.Redactor) error {
	if strings.TrimSpace(a.DatabaseURL) == "" {
		return configError{"DATABASE_URL (or --database-url) is required, e.g. postgres://ingest@db.example:5432/ingest?sslmode=require (password in the URL or PGPASSWORD)"}
	}
	if err := checkDBScheme(a.DatabaseURL); err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(a.DatabaseURL)
	if err != nil {
		return configError{fmt.Sprintf("DATABASE_URL is not a valid Postgres URL: %v", err)}
	}
	r.Add(cfg.ConnConfig.Password)
	if a.PushgatewayURL != "" {
		if err := checkHTTPURL(a.PushgatewayURL); err != nil {
			return configError{"PUSHGATEWAY_URL: " + err.Error()}
		}
	}
	if act.config != nil {
		return act.config(a, r)
	}
	return nil
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL with a host", raw)
	}
	return nil
}

// describeDB names the database without its password.
func describeDB(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

func (app *app) close() { app.pool.Close() }

// machines lists every pipeline's state machine, in report order.
func (app *app) machines() []*status.Machine { return machinesOf(app.pipelines) }

// exec runs fn as a locked, recorded run of command (see package run).
func (app *app) exec(ctx context.Context, command string, fn func(ctx context.Context, r *run.Run) error) error {
	return app.execLocked(ctx, command, command, fn)
}

// execLocked is exec with a lock shared by several commands (lockName).
func (app *app) execLocked(ctx context.Context, command, lockName string, fn func(ctx context.Context, r *run.Run) error) error {
	return app.execLockSet(ctx, command, lockName, nil, nil, fn)
}

// execLockSet is execLocked taking more locks with lockName, all or none (run.Options.AlsoLocks),
// and fencing out the runs that held the locks of fenceOut (run.Options.FenceOut).
func (app *app) execLockSet(ctx context.Context, command, lockName string, also []status.SetLock, fenceOut []string, fn func(ctx context.Context, r *run.Run) error) error {
	return app.execSet(ctx, command, lockSet{name: lockName, also: also, fenceOut: fenceOut}, fn)
}

// lockSet is the locks a run takes and the locks of the runs it fences out (run.Options).
type lockSet struct {
	name             string
	also             []status.SetLock
	fenceOut         []string
	fenceOutPrefixes []string
}

// execSet is exec under the lock set set.
func (app *app) execSet(ctx context.Context, command string, set lockSet, fn func(ctx context.Context, r *run.Run) error) error {
	// Main has checked the schema (checkSchema) before dispatching here.
	return run.Exec(ctx, run.Options{
		Pool:             app.pool,
		Fence:            app.fence,
		Command:          command,
		LockName:         set.name,
		AlsoLocks:        set.also,
		FenceOut:         set.fenceOut,
		FenceOutPrefixes: set.fenceOutPrefixes,
		Log:              app.log.With("cmd", command),
		PushgatewayURL:   app.args.PushgatewayURL,
		MetricsTextfile:  app.args.MetricsTextfile,
		Records:          app.records,
	}, fn)
}

// exitCode maps a command's error to the process exit code, logging it once.
func (app *app) exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var cfgErr configError
	var useErr usageError
	var sigErr signalError
	switch {
	case errors.Is(err, status.ErrLocked):
		app.log.Warn(err.Error())
		return exitLocked
	case errors.As(err, &cfgErr):
		app.log.Error(configPrefix+err.Error(), "exit_code", exitConfig)
		return exitConfig
	case errors.As(err, &useErr):
		app.log.Error("usage error: "+err.Error(), "exit_code", exitUsage)
		return exitUsage
	case errors.As(err, &sigErr):
		return exitCodeFor(sigErr) // run already logged the interruption
	case errors.Is(err, errReported), errors.As(err, new(*run.Error)):
		return exitFailed // already logged
	}
	app.log.Error("command failed", "error", err)
	return exitFailed
}

// errReported is returned by commands that already told the user what went wrong.
var errReported = errors.New("failed (reported above)")

func exitCodeFor(e signalError) int {
	if e.sig == os.Interrupt {
		return exitSIGINT
	}
	return exitSIGTERM
}

// printJSON writes v to stdout as indented JSON: the --json output of every command.
func (app *app) printJSON(v any) error {
	enc := json.NewEncoder(app.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeHistory writes a record's status history, one change per line, for `ingest show`.
func writeHistory(w io.Writer, hist []status.HistoryEntry) {
	for _, h := range hist {
		fmt.Fprintf(w, "  %s\t%s\t-> %s\t%s\t%s\n", h.ChangedAt.UTC().Format(time.RFC3339), h.From, h.To, shown(h.Actor), shown(h.Reason))
	}
}
