// Command ingest is the batch-ingestion job: see README.md, or run `ingest --help`.
//
// This package is wiring only: it parses the command line, builds the configuration, logger and
// database pool, and hands each command to the package that implements it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alexflint/go-arg"

	"github.com/ingest-dev/ingest/internal/bitrix"
)

// Exit codes; documented in --help (args.Epilogue) and README.md.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitLocked  = 75 // EX_TEMPFAIL
	exitConfig  = 78 // EX_CONFIG
	exitSIGINT  = 130
	exitSIGTERM = 143
)

func main() {
	ctx, stop := notifyContext(context.Background())
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// signalError is the cause of a run's cancellation by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "stopped by " + e.sig.String() }

// notifyContext cancels ctx with a signalError on the first SIGINT or SIGTERM, so the run
// finishes its record in flight and exits; a second signal exits at once.
func notifyContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-ch
		cancel(signalError{sig})
		sig = <-ch
		os.Exit(exitCodeFor(signalError{sig}))
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

// Main runs one command line and returns the exit code. It is main without the process-wide
// parts, so tests can call it.
func Main(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	var a args
	bx := bitrixArgs(bitrix.Catalog())
	p, err := arg.NewParser(arg.Config{Program: "ingest", Out: stderr, Exit: func(int) {}}, &a, bx)
	if err != nil {
		fmt.Fprintln(stderr, "ingest: internal error:", err)
		return exitFailed
	}
	err = p.Parse(argv)
	a.Bitrix = bitrixFrom(bx)
	names := p.SubcommandNames()
	switch {
	case errors.Is(err, arg.ErrHelp):
		_ = p.WriteHelpForSubcommand(stdout, names...)
		return exitOK
	case errors.Is(err, arg.ErrVersion):
		fmt.Fprintln(stdout, a.Version())
		return exitOK
	case err != nil:
		_ = p.WriteUsageForSubcommand(stderr, names...)
		fmt.Fprintf(stderr, "error: %v\n", err)
		return exitUsage
	}
	command := strings.Join(names, " ")
	if !isLeaf(command) {
		_ = p.WriteHelpForSubcommand(stderr, names...)
		if command == "" {
			fmt.Fprintln(stderr, "error: a command is required")
		} else {
			fmt.Fprintf(stderr, "error: %q needs a subcommand\n", command)
		}
		return exitUsage
	}
	var usage error
	switch command {
	case "status set":
		usage = a.Status.Set.check()
	case "status ack":
		usage = a.Status.Ack.check()
	case "show bitrix":
		usage = a.Show.Bitrix.check()
	}
	if usage != nil {
		_ = p.WriteUsageForSubcommand(stderr, names...)
		fmt.Fprintln(stderr, "error:", usage)
		return exitUsage
	}
	if command == "version" {
		fmt.Fprintln(stdout, a.Version())
		return exitOK
	}

	app, code := newApp(ctx, command, a, stdout, stderr)
	if app == nil {
		return code
	}
	defer app.close()
	err = app.dispatch(ctx, command, a)
	return app.exitCode(err)
}

// isLeaf reports whether command is a complete command rather than a group needing a subcommand.
func isLeaf(command string) bool {
	switch command {
	case "migrate", "migrate up", "migrate status",
		"status", "status habr", "status bitrix", "status set", "status ack",
		"show habr", "show bitrix", "discover habr", "extract habr", "bitrix status", "version":
		return true
	}
	_, _, ok := bitrixCommand(command)
	return ok
}

func (app *app) dispatch(ctx context.Context, command string, a args) error {
	switch command {
	case "migrate", "migrate up":
		return app.migrateUp(ctx)
	case "migrate status":
		return app.migrateStatus(ctx)
	case "status":
		return app.status(ctx, app.machines(), a.Status.JSON)
	case "status habr":
		return app.status(ctx, app.machines()[:1], a.Status.JSON)
	case "status bitrix":
		return app.status(ctx, app.machines()[1:2], a.Status.JSON)
	case "bitrix status":
		return app.bitrixStatus(ctx, a.Bitrix.Status.JSON)
	case "status set":
		return app.statusSet(ctx, a.Status.Set)
	case "status ack":
		return app.statusAck(ctx, a.Status.Ack)
	case "show habr":
		return app.showHabr(ctx, a.Show.Habr)
	case "show bitrix":
		return app.showBitrix(ctx, a.Show.Bitrix)
	case "discover habr":
		return app.discoverHabr(ctx, a.Discover.Habr)
	case "extract habr":
		return app.extractHabr(ctx)
	}
	if entity, phase, ok := bitrixCommand(command); ok {
		return app.bitrixPhase(ctx, command, entity, phase)
	}
	return fmt.Errorf("unknown command %q", command)
}
