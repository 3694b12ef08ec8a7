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
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/alexflint/go-arg"

	"github.com/ingest-dev/ingest/internal/redact"
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

// notifyContext cancels ctx with a signalError on the first SIGINT or SIGTERM: the run stops at
// once, the record in flight keeping its status for the next run (README, Exit codes), and
// records its outcome; a second signal exits at once.
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
	argv = helpAlias(argv)
	out := &cliOutput{stderr: stderr, format: formatFromArgv(argv, os.Getenv)}
	var a args
	ps := pipelines()
	root, _ := commandTree(ps)
	line, err := parseLine(root, &a, argv, stderr)
	names := line.names()
	var unknown errUnknownCommand
	switch {
	case errors.As(err, &unknown):
		out.usage(line, err.Error(), false)
		return exitUsage
	case errors.Is(err, arg.ErrHelp):
		line.writeHelp(stdout)
		return exitOK
	case errors.Is(err, arg.ErrVersion):
		fmt.Fprintln(stdout, a.Version())
		return exitOK
	case isEnvError(err):
		// An environment value that does not parse is configuration, not a mistyped command line.
		out.logger().Error(configPrefix+plainParseError(err.Error()), "exit_code", exitConfig)
		return exitConfig
	case err != nil:
		out.usage(line, plainParseError(err.Error()), false)
		return exitUsage
	}
	command := strings.Join(names, " ")
	if line.isGroup() {
		msg := "a command is required"
		if command != "" {
			msg = fmt.Sprintf("%s needs a subcommand", command)
		}
		out.usage(line, msg, true)
		return exitUsage
	}
	act := line.node().act
	if act.usage != nil {
		if err := act.usage(); err != nil {
			out.usage(line, err.Error(), false)
			return exitUsage
		}
	}
	if act.local != nil {
		act.local(stdout)
		return exitOK
	}

	app, code := newApp(ctx, command, act, a, ps, stdout, stderr)
	if app == nil {
		return code
	}
	defer app.close()
	if err := app.checkSchema(ctx, act.schema); err != nil {
		return app.exitCode(err)
	}
	return app.exitCode(act.run(ctx, app))
}

// helpAlias turns `ingest help [COMMAND...]` into `ingest [COMMAND...] --help`.
func helpAlias(argv []string) []string {
	if len(argv) > 0 && argv[0] == "help" {
		return append(slices.Clone(argv[1:]), "--help")
	}
	return argv
}

// isEnvError reports whether go-arg failed on an environment variable's value rather than on
// the command line. go-arg has no error type for it, only this wording (parse.go, v1.6).
func isEnvError(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "error processing environment variable ")
}

// strconvError is how go-arg passes on strconv's errors: `strconv.ParseInt: parsing "ten":
// invalid syntax`.
var strconvError = regexp.MustCompile(`strconv\.Parse(Int|Uint|Float|Bool): parsing ("(?:[^"\\]|\\.)*"): (invalid syntax|value out of range)`)

// plainParseError rewrites go-arg's wording of a value that does not parse ("error processing
// environment variable BITRIX_TEST_LIMIT: strconv.ParseInt: parsing ...") for people:
// `BITRIX_TEST_LIMIT: "ten" is not a whole number`.
func plainParseError(msg string) string {
	msg = strings.Replace(msg, "error processing environment variable ", "", 1)
	msg = strings.Replace(msg, "error processing ", "", 1)
	return strconvError.ReplaceAllStringFunc(msg, func(m string) string {
		g := strconvError.FindStringSubmatch(m)
		switch {
		case g[3] == "value out of range":
			return g[2] + " is out of range"
		case g[1] == "Bool":
			return g[2] + " is not true or false"
		case g[1] == "Float":
			return g[2] + " is not a number"
		}
		return g[2] + " is not a whole number"
	})
}

// cliOutput reports what goes wrong before a command has its logger: usage errors and
// configuration errors, in the log format asked for.
type cliOutput struct {
	stderr io.Writer
	format string
}

func (o *cliOutput) logger() *slog.Logger { return fallbackLogger(o.stderr, o.format, redact.New()) }

// usage reports a command line the program cannot use: as text, the usage (or the whole help
// when withHelp) and the error; as JSON, one line holding both.
func (o *cliOutput) usage(l *cliLine, msg string, withHelp bool) {
	var u strings.Builder
	if withHelp {
		l.writeHelp(&u)
	} else {
		l.writeUsage(&u)
	}
	if wantsJSON(o.stderr, o.format) {
		o.logger().Error("usage error: "+msg, "usage", u.String(), "exit_code", exitUsage)
		return
	}
	fmt.Fprint(o.stderr, u.String())
	fmt.Fprintln(o.stderr, "error:", msg)
}

// checkEntity refuses an --entity the records of the machine named source do not have.
func checkEntity(ps []*pipeline, command, source, entity string) error {
	if entity == "" {
		return nil
	}
	for _, p := range ps {
		for _, m := range p.machines {
			if m.Name == source && p.entities != nil && !slices.Contains(p.entities(), entity) {
				return usageError{fmt.Sprintf("%s: unknown %s --entity %q (valid: %s)", command, source, entity, strings.Join(p.entities(), ", "))}
			}
		}
	}
	return nil
}
