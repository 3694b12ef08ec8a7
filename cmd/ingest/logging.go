package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/ingest-dev/ingest/internal/redact"
)

// newLogger builds the logger every command line goes through: with LOG_FORMAT=json each line on
// stderr is one JSON object, so a log pipeline never meets a line it cannot parse.
func newLogger(w io.Writer, format, level string, r *redact.Redactor) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("LOG_LEVEL %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: r.ReplaceAttr}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "auto", "":
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("LOG_FORMAT %q: want auto, json or text", format)
}

// fallbackLogger is the logger for reporting that the logging configuration itself is wrong:
// the requested format when it is a valid one (so LOG_FORMAT=json LOG_LEVEL=loud still reports
// in JSON), text otherwise, at level info.
func fallbackLogger(w io.Writer, format string, r *redact.Redactor) *slog.Logger {
	if log, err := newLogger(w, format, "info", r); err == nil {
		return log
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: r.ReplaceAttr}))
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// formatFromArgv finds the log format before the command line is parsed, so that even a command
// line that does not parse is reported in the format asked for: --log-format wins over
// LOG_FORMAT, as it does after parsing.
func formatFromArgv(argv []string, getenv func(string) string) string {
	format := getenv("LOG_FORMAT")
	for i, a := range argv {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--log-format="); ok {
			format = v
		} else if a == "--log-format" && i+1 < len(argv) {
			format = argv[i+1]
		}
	}
	return format
}

// wantsJSON reports whether lines for w are JSON under format (see newLogger).
func wantsJSON(w io.Writer, format string) bool {
	return format == "json" || ((format == "auto" || format == "") && !isTerminal(w))
}
