package main

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// mainOut runs Main in the process; these command lines stop before anything connects.
func mainOut(t *testing.T, argv ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), argv, &out, &errOut)
	return code, out.String(), errOut.String()
}

// walkTree calls visit with the words of every command of the tree below root.
func walkTree(root *cliCommand, words []string, visit func(words []string, c *cliCommand)) {
	for _, s := range root.subs {
		w := append(slices.Clone(words), s.name)
		visit(w, s)
		walkTree(s, w, visit)
	}
}

func TestHelpAtEveryLevel(t *testing.T) {
	root, _ := commandTree(pipelines())
	paths := [][]string{nil}
	subs := map[string][]*cliCommand{"": root.subs}
	walkTree(root, nil, func(words []string, c *cliCommand) {
		paths = append(paths, words)
		subs[strings.Join(words, " ")] = c.subs
		if c.help == "" {
			t.Errorf("ingest %s has no help line", strings.Join(words, " "))
		}
	})
	for _, words := range paths {
		name := strings.Join(words, " ")
		code, stdout, stderr := mainOut(t, append(slices.Clone(words), "--help")...)
		if code != exitOK || stderr != "" || !strings.Contains(stdout, "Usage: "+strings.TrimSpace("ingest "+name)) {
			t.Errorf("ingest %s --help = exit %d\nstdout: %.400s\nstderr: %s", name, code, stdout, stderr)
			continue
		}
		for _, s := range subs[name] {
			if !strings.Contains(stdout, "\n  "+s.name+" ") {
				t.Errorf("ingest %s --help does not list its command %q:\n%s", name, s.name, stdout)
			}
		}
		if _, viaHelp, _ := mainOut(t, append([]string{"help"}, words...)...); viaHelp != stdout {
			t.Errorf("ingest help %s differs from ingest %s --help", name, name)
		}
	}
	if len(paths) < 100 {
		t.Errorf("walked %d commands; the tree lost its entity commands", len(paths))
	}
}

func TestBitrixCommandsComeFromTheRegistry(t *testing.T) {
	root, _ := commandTree(pipelines())
	b := root.sub("bitrix")
	var names []string
	for _, s := range b.subs[3:] { // after status, plan and migrate
		names = append(names, s.name)
		var phases []engine.Phase
		for _, p := range s.subs {
			phases = append(phases, engine.Phase(p.name))
		}
		if want := append(engine.Phases(), "run"); !slices.Equal(phases, want) {
			t.Errorf("bitrix %s: phases %v, want %v", s.name, phases, want)
		}
	}
	if want := bitrix.Catalog().CommandNames(); !slices.Equal(names, want) {
		t.Errorf("bitrix commands %v, want the registry's %v", names, want)
	}
}

func TestUnknownCommandsAreUsageErrors(t *testing.T) {
	t.Setenv("LOG_FORMAT", "json")
	for _, argv := range [][]string{
		{"nosuch"}, {"help", "nosuch"}, {"nosuch", "--help"}, {"--log-level", "debug", "nosuch", "-h"},
		{"bitrix", "nosuch", "--help"}, {"help", "bitrix", "nosuch"}, {"bitrix", "users", "nosuch"}, {"bitrix", "users", "nosuch", "--help"},
		{"status", "nosuch", "--help"}, {"show", "nosuch", "1"}, {"social", "nosuch", "--help"}, {"social", "accounts", "nosuch", "--help"},
		{"migrate", "nosuch", "--help"},
	} {
		code, stdout, stderr := mainOut(t, argv...)
		if code != exitUsage || !strings.Contains(stderr, `"usage error: invalid subcommand: nosuch (ingest `) || stdout != "" {
			t.Errorf("ingest %v = exit %d\nstdout: %.200s\nstderr: %s\nwant exit %d naming nosuch", argv, code, stdout, stderr, exitUsage)
		}
		checkJSONLines(t, argv, stderr)
	}
}

// unsetenv removes an environment variable for the test (go-arg takes an empty one as given).
func unsetenv(t *testing.T, name string) {
	t.Setenv(name, "")
	os.Unsetenv(name)
}

// parseForTest parses argv against a fresh tree and returns the line and the bitrix command's
// arguments.
func parseForTest(t *testing.T, argv ...string) (*cliLine, *args, *statusCmd, *bitrixCmd, error) {
	t.Helper()
	var a args
	root, st := commandTree(pipelines())
	line, err := parseLine(root, &a, argv, &bytes.Buffer{})
	return line, &a, st, root.sub("bitrix").options.(*bitrixCmd), err
}

func TestCommandWordsAmongFlagValues(t *testing.T) {
	unsetenv(t, "BITRIX_CHAT_RESCAN")
	line, a, _, b, err := parseForTest(t, "--log-level", "debug", "bitrix", "--rate", "5/250", "users", "--concurrency", "3", "get")
	if err != nil || !slices.Equal(line.names(), []string{"bitrix", "users", "get"}) || a.LogLevel != "debug" || b.Rate != "5/250" || b.Concurrency != 3 {
		t.Errorf("global and bitrix flags between the words: %v %v %+v %+v", line.names(), err, a, b)
	}
	line, a, st, _, err := parseForTest(t, "--log-format", "status", "status", "--json")
	if err != nil || !slices.Equal(line.names(), []string{"status"}) || a.LogFormat != "status" || !st.JSON {
		t.Errorf("a flag's value that names a command: %v %v %+v", line.names(), err, a)
	}
	line, _, st, _, err = parseForTest(t, "status", "set", "habr", "--id", "1", "2", "--to", "extracted", "--reason", "x", "--by", "me")
	if err != nil || !slices.Equal(line.names(), []string{"status", "set"}) || st.Set.Source != "habr" || !slices.Equal(st.Set.IDs, []string{"1", "2"}) {
		t.Errorf("status set: %v %v %+v", line.names(), err, st.Set)
	}
	line, _, _, _, err = parseForTest(t, "social", "accounts", "add", "--username", "bitrix")
	if err != nil || !slices.Equal(line.names(), []string{"social", "accounts", "add"}) {
		t.Errorf("social accounts add --username bitrix: %v %v", line.names(), err)
	}
}

// rescans reports whether the engine of the command line's bitrix command would rescan chats,
// as bitrix.ChatRescan(true) makes it: the chats' own flag applied to the registry by its node.
func rescans(t *testing.T, line *cliLine, b *bitrixCmd) bool {
	t.Helper()
	if act := line.node().act; act != nil && act.usage != nil {
		if err := act.usage(); err != nil {
			t.Fatalf("ingest %v: %v", line.names(), err)
		}
	}
	reg, err := b.registry()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := reg.Entity(bitrix.Chats)
	plain, _ := bitrix.Catalog().Entity(bitrix.Chats)
	rescan, _ := bitrix.Catalog(bitrix.ChatRescan(true)).Entity(bitrix.Chats)
	if reflect.DeepEqual(plain.Lister, rescan.Lister) {
		t.Fatal("ChatRescan(true) changes nothing in the chats' lister: this test cannot tell")
	}
	return reflect.DeepEqual(got.Lister, rescan.Lister)
}

func TestChatRescanIsAFlagOfTheChatsCommands(t *testing.T) {
	unsetenv(t, "BITRIX_CHAT_RESCAN")
	for _, phase := range []string{"get", "run"} {
		line, _, _, b, err := parseForTest(t, "bitrix", "chats", phase, "--chat-rescan")
		if err != nil || !rescans(t, line, b) {
			t.Errorf("bitrix chats %s --chat-rescan: %v, no rescan", phase, err)
		}
		if line, _, _, b, err := parseForTest(t, "bitrix", "chats", phase); err != nil || rescans(t, line, b) {
			t.Errorf("bitrix chats %s rescans without --chat-rescan (%v)", phase, err)
		}
	}
	for _, argv := range [][]string{{"bitrix", "users", "get", "--chat-rescan"}, {"bitrix", "--chat-rescan", "chats", "get"}, {"bitrix", "chats", "set", "--chat-rescan"}} {
		if code, _, stderr := mainOut(t, argv...); code != exitUsage || !strings.Contains(stderr, "unknown argument --chat-rescan") {
			t.Errorf("ingest %v = exit %d, %s; want a usage error", argv, code, stderr)
		}
	}
	t.Setenv("BITRIX_CHAT_RESCAN", "true")
	if line, _, _, b, err := parseForTest(t, "bitrix", "chats", "get"); err != nil || !rescans(t, line, b) {
		t.Errorf("BITRIX_CHAT_RESCAN=true: %v, no rescan", err)
	}
	t.Setenv("BITRIX_CHAT_RESCAN", "maybe")
	if line, _, _, b, err := parseForTest(t, "bitrix", "users", "get"); err != nil || rescans(t, line, b) {
		t.Errorf("BITRIX_CHAT_RESCAN is read by the chats commands only: users get gave %v", err)
	}
}

func TestUnknownSourceListsTheSources(t *testing.T) {
	t.Setenv("LOG_FORMAT", "text")
	code, _, stderr := mainOut(t, "status", "bogus")
	for _, p := range pipelines() {
		if !strings.Contains(stderr, p.name) {
			t.Errorf("ingest status bogus does not name the source %s: %s", p.name, stderr)
		}
	}
	if code != exitUsage || !strings.Contains(stderr, "invalid subcommand: bogus (ingest status takes ") {
		t.Errorf("ingest status bogus = exit %d: %s", code, stderr)
	}
}
