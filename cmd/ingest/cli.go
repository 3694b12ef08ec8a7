package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/alexflint/go-arg"
)

// cliCommand is one node of the command tree. The tree is a value built from the pipelines and
// the Bitrix24 registry, so commands that come from a list (one per entity, `status NAME`,
// `show NAME`) are added by looping, without building go-arg structs at run time. go-arg still
// parses every flag, positional and environment variable: of the command and of every command
// above it, as one parser over their options.
type cliCommand struct {
	name, help string
	// options is the go-arg destination of the command's own flags and positionals (a pointer to
	// a struct without go-arg subcommands: the tree holds every command), nil for none.
	options any
	subs    []*cliCommand
	// act is what the command does when the line names it; nil for a command that only groups
	// others. A command with subs may also run by itself (`status`).
	act *action
}

func (c *cliCommand) sub(name string) *cliCommand {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

// cliLine is a command line matched against the tree.
type cliLine struct {
	globals *args
	path    []*cliCommand // from the root
	words   []string      // the tree's command words, without the root's name
	rest    []string      // the command line without those words: go-arg's input
	parser  *arg.Parser   // over the path's options
	stderr  io.Writer
}

// errUnknownCommand is a word that names no command where a command is expected. It is a usage
// error even when --help is asked for (go-arg lets --help win over its own errors), so that a
// script asking help for a mistyped command fails.
type errUnknownCommand struct {
	word string
	// command is the command whose subcommand was expected ("ingest status"), valid its
	// subcommands: the error names what would have been understood.
	command string
	valid   []string
}

func (e errUnknownCommand) Error() string {
	if len(e.valid) == 0 {
		return "invalid subcommand: " + e.word
	}
	return fmt.Sprintf("invalid subcommand: %s (%s takes %s)", e.word, e.command, strings.Join(e.valid, ", "))
}

// parseLine matches argv against the tree rooted at root (whose options are globals) and parses
// it. The returned error is go-arg's (arg.ErrHelp and arg.ErrVersion included) or
// errUnknownCommand; the line is usable for usage and help whatever the error.
func parseLine(root *cliCommand, globals *args, argv []string, stderr io.Writer) (*cliLine, error) {
	l := &cliLine{globals: globals, path: []*cliCommand{root}, rest: slices.Clone(argv), stderr: stderr}
	for len(l.node().subs) > 0 {
		j, err := l.nextWord()
		if err != nil {
			l.parser, _ = l.newParser(nil)
			return l, err
		}
		if j < 0 {
			break
		}
		l.path = append(l.path, l.node().sub(l.rest[j]))
		l.words = append(l.words, l.rest[j])
		l.rest = slices.Delete(l.rest, j, j+1)
	}
	var err error
	if l.parser, err = l.newParser(nil); err != nil {
		return l, err
	}
	if len(l.node().subs) > 0 {
		if word := l.strayWord(); word != "" {
			return l, l.unknown(word)
		}
	}
	return l, l.parser.Parse(l.rest)
}

func (l *cliLine) node() *cliCommand { return l.path[len(l.path)-1] }

// names are the command's words.
func (l *cliLine) names() []string { return l.words }

// newParser is a go-arg parser over the options of the path, the command's own first and the
// global ones last, plus extra.
func (l *cliLine) newParser(extra any) (*arg.Parser, error) {
	var dests []any
	for i := len(l.path) - 1; i > 0; i-- {
		if o := l.path[i].options; o != nil {
			dests = append(dests, o)
		}
	}
	dests = append(dests, l.globals)
	if extra != nil {
		dests = append(dests, extra)
	}
	program := strings.Join(append([]string{"ingest"}, l.words...), " ")
	return arg.NewParser(arg.Config{Program: program, Out: l.stderr, Exit: func(int) {}}, dests...)
}

// positionalWords catches the words go-arg does not take as flags or their values.
type positionalWords struct {
	Words []string `arg:"positional"`
}

// nextWord finds where the command line names a subcommand of the current command: the first
// word that is a subcommand's name and that go-arg, parsing the flags before it, sees as a word
// of its own (not a flag's value). It returns -1 when there is none. go-arg is asked rather
// than told which flags take values, so the tree knows nothing of flag syntax.
func (l *cliLine) nextWord() (int, error) {
	for j, tok := range l.rest {
		if tok == "--" {
			break
		}
		if l.node().sub(tok) == nil {
			continue
		}
		var words positionalWords
		p, err := l.newParser(&words)
		if err != nil {
			return -1, err
		}
		err = p.Parse(l.rest[:j])
		if isEnvError(err) {
			return -1, err
		}
		if err == nil && len(words.Words) == 0 {
			return j, nil
		}
	}
	return -1, nil
}

// strayWord returns the first word left on the line of a command that has subcommands: one
// that names none of them. --help does not hide it.
func (l *cliLine) strayWord() string {
	var words positionalWords
	p, err := l.newParser(&words)
	if err != nil {
		return ""
	}
	_ = p.Parse(withoutHelp(l.rest))
	if len(words.Words) > 0 {
		return words.Words[0]
	}
	return ""
}

func withoutHelp(argv []string) []string {
	var out []string
	for i, a := range argv {
		if a == "--" {
			return append(out, argv[i:]...)
		}
		if a != "-h" && a != "--help" {
			out = append(out, a)
		}
	}
	return out
}

// isGroup reports whether the parsed command only groups others.
func (l *cliLine) isGroup() bool { return l.node().act == nil }

// ownParser is a go-arg parser over the command's own options only (the root's are the global
// ones), for its usage and help.
func (l *cliLine) ownParser() *arg.Parser {
	dest := l.node().options
	if len(l.path) == 1 {
		dest = l.globals
	} else if dest == nil {
		dest = &struct{}{}
	}
	p, err := arg.NewParser(arg.Config{Program: strings.Join(append([]string{"ingest"}, l.words...), " ")}, blank(dest))
	if err != nil {
		panic(fmt.Sprintf("ingest %s: options parsed before do not build a parser: %v", strings.Join(l.words, " "), err))
	}
	return p
}

// writeUsage writes the command's usage line, with its own options as go-arg writes a
// subcommand's.
func (l *cliLine) writeUsage(w io.Writer) {
	var b strings.Builder
	l.ownParser().WriteUsage(&b)
	if len(l.node().subs) > 0 {
		fmt.Fprintln(w, strings.TrimSuffix(b.String(), "\n")+" <command> [<args>]")
		return
	}
	fmt.Fprint(w, b.String())
}

// writeHelp writes the command's help in go-arg's layout: description, usage, the command's
// positionals and options, the options of the commands above it as "Global options", its
// subcommands, and the exit codes.
func (l *cliLine) writeHelp(w io.Writer) {
	var b strings.Builder
	l.writeHelpTo(&b)
	fmt.Fprint(w, markSetEnv(b.String(), os.LookupEnv))
}

// writeHelpTo writes the help with go-arg's notes of the variables as they are.
func (l *cliLine) writeHelpTo(w io.Writer) {
	epilogue := "\n" + l.globals.Epilogue() + "\n"
	var own strings.Builder
	l.ownParser().WriteHelp(&own)
	help := strings.TrimSuffix(own.String(), epilogue)
	var usage strings.Builder
	l.writeUsage(&usage)
	if i := strings.Index(help, "Usage: "); i >= 0 {
		if end := strings.IndexByte(help[i:], '\n'); end >= 0 {
			help = help[:i] + usage.String() + help[i+end+1:]
		}
	}
	if len(l.path) > 1 {
		fmt.Fprintln(w, l.globals.Description())
		fmt.Fprintln(w, l.globals.Version())
	}
	fmt.Fprint(w, help)
	if len(l.path) > 1 {
		fmt.Fprint(w, "\nGlobal options:\n"+l.inheritedOptions())
	}
	if len(l.node().subs) > 0 {
		fmt.Fprint(w, "\nCommands:\n")
		for _, s := range l.node().subs {
			lhs := "  " + s.name
			if len(lhs)+2 < helpColumn {
				fmt.Fprintf(w, "%-*s%s\n", helpColumn, lhs, s.help)
			} else {
				fmt.Fprintf(w, "%s\n%*s%s\n", lhs, helpColumn, "", s.help)
			}
		}
	}
	fmt.Fprint(w, epilogue)
}

// inheritedOptions are the option lines of go-arg's help over the options of the commands above
// this one, the global ones last.
func (l *cliLine) inheritedOptions() string {
	var dests []any
	for i := len(l.path) - 2; i > 0; i-- {
		if o := l.path[i].options; o != nil {
			dests = append(dests, blank(o))
		}
	}
	p, err := arg.NewParser(arg.Config{Program: "ingest"}, append(dests, blank(l.globals))...)
	if err != nil {
		return ""
	}
	var b strings.Builder
	p.WriteHelp(&b)
	_, opts, _ := strings.Cut(b.String(), "\nOptions:\n")
	opts, _, _ = strings.Cut(opts, "  --help, -h ")
	return opts
}

// helpColumn is where go-arg starts the description of an option or command.
const helpColumn = 25

// unknown is the error for word where the line's command expects one of its subcommands.
func (l *cliLine) unknown(word string) errUnknownCommand {
	e := errUnknownCommand{word: word, command: strings.Join(append([]string{"ingest"}, l.words...), " ")}
	for _, s := range l.node().subs {
		e.valid = append(e.valid, s.name)
	}
	return e
}
