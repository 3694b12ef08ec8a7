package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// newEntityRegistry is the catalog plus an entity it does not have, as docs/adding-an-entity.md
// adds one: a parent with a child of its own id format and a flag of its own.
func newEntityRegistry(t *testing.T) *engine.Registry {
	t.Helper()
	parent := &engine.Entity{Name: "departments", Help: "the company structure", Batch: 50,
		Lister: &engine.IDScan{Scan: rest.Scan{Method: "department.get", FilterParam: "FILTER"}},
		Refs:   []engine.Ref{{Field: "UF_HEAD", Entity: bitrix.Users, Name: "head"}},
		Flags: []engine.Flag{{Name: "headless-departments", Env: "TEST_HEADLESS_DEPARTMENTS", Phases: []engine.Phase{engine.PhaseSet},
			Help: "send a department without a head",
			Set: func(e *engine.Entity, _ string) error {
				e.Refs[0].Optional = true
				return nil
			}},
			{Name: "head-of", Placeholder: "ID", Phases: []engine.Phase{engine.PhaseGet}, Help: "only the departments this user heads",
				Set: func(e *engine.Entity, v string) error {
					if strings.Trim(v, "0123456789") != "" {
						return errors.New("want a user id")
					}
					return nil
				}}}}
	child := &engine.Entity{Name: "department_members", Parent: "departments", Batch: 100, IDFormat: "DEPARTMENT:USER",
		Fetch: &engine.ChildFetch{Method: "user.get", KeyField: "ID", Params: func(id string) any { return map[string]any{"FILTER": map[string]any{"UF_DEPARTMENT": id}} }}}
	reg, err := engine.NewRegistry(append(bitrix.Catalog().All(), parent, child)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestANewEntityNeedsNoLineHere builds the bitrix command from a registry with an entity that no
// line of cmd/ingest knows: its commands, its flags on the phases that take them (with their
// variables, in --help), their effect on the engine's registry and the id format show bitrix
// names all come from the entity's declaration.
func TestANewEntityNeedsNoLineHere(t *testing.T) {
	unsetenv(t, "TEST_HEADLESS_DEPARTMENTS")
	c := &bitrixCmd{Status: &bitrixStatusCmd{}, Plan: &bitrixPlanCmd{}, Migrate: &bitrixMigrateCmd{},
		catalog: func() *engine.Registry { return newEntityRegistry(t) }}
	parse := func(argv ...string) (*cliLine, error) {
		var a args
		root := &cliCommand{name: "ingest", subs: []*cliCommand{bitrixTree(c.catalog(), c)}}
		c.given = nil
		return parseLine(root, &a, argv, &bytes.Buffer{})
	}
	headless := func(line *cliLine) bool {
		t.Helper()
		if err := line.node().act.usage(); err != nil {
			t.Fatalf("ingest %v: %v", line.names(), err)
		}
		reg, err := c.registry()
		if err != nil {
			t.Fatal(err)
		}
		e, _ := reg.Entity("departments")
		return e.Refs[0].Optional
	}

	for _, phase := range []string{"set", "run"} {
		line, err := parse("bitrix", "departments", phase, "--headless-departments")
		if err != nil || !headless(line) {
			t.Errorf("bitrix departments %s --headless-departments: %v, or the flag did not set the entity", phase, err)
		}
		var help strings.Builder
		line.writeHelpTo(&help)
		if !strings.Contains(help.String(), "--headless-departments") || !strings.Contains(help.String(), "send a department without a head [env: TEST_HEADLESS_DEPARTMENTS]") {
			t.Errorf("bitrix departments %s --help does not offer the flag:\n%s", phase, help.String())
		}
	}
	if line, err := parse("bitrix", "departments", "set"); err != nil || headless(line) {
		t.Errorf("bitrix departments set without the flag: %v, or the entity was set anyway", err)
	}
	t.Setenv("TEST_HEADLESS_DEPARTMENTS", "true")
	if line, err := parse("bitrix", "departments", "set"); err != nil || !headless(line) {
		t.Errorf("TEST_HEADLESS_DEPARTMENTS=true: %v, or the entity was not set", err)
	}
	for _, argv := range [][]string{{"bitrix", "departments", "get", "--headless-departments"}, {"bitrix", "users", "set", "--headless-departments"}} {
		if _, err := parse(argv...); err == nil || !strings.Contains(err.Error(), "unknown argument --headless-departments") {
			t.Errorf("ingest %v: %v, want the flag refused", argv, err)
		}
	}
	// A value the entity refuses is a usage error, found before anything connects.
	line, err := parse("bitrix", "departments", "get", "--head-of", "x1")
	if err != nil {
		t.Fatal(err)
	}
	if err := line.node().act.usage(); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "bitrix departments --head-of: want a user id") {
		t.Errorf("--head-of x1: %v, want a usage error", err)
	}
	if line, err = parse("bitrix", "departments", "get", "--head-of", "12"); err != nil || line.node().act.usage() != nil {
		t.Errorf("--head-of 12: %v", err)
	}

	if id := showBitrixHelp(c.catalog())["ID"]; !strings.Contains(id, "department_members: DEPARTMENT:USER") {
		t.Errorf("show bitrix's ID help does not give the new child's id format: %s", id)
	}
}
