package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
)

// What `bitrix migrate --only/--from` runs: command entities in the registry's order, whatever
// order they are named in, and a refusal listing the valid names for an unknown one.
func TestMigrateEntities(t *testing.T) {
	t.Parallel()
	reg := enginetest.Registry()
	all := reg.CommandNames()
	names := func(o engine.MigrateOptions) []string {
		t.Helper()
		ents, err := reg.MigrateEntities(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name)
		}
		return out
	}
	if got := names(engine.MigrateOptions{}); !slices.Equal(got, all) {
		t.Errorf("everything = %v, want %v", got, all)
	}
	if got := names(engine.MigrateOptions{Only: []string{teams, people}}); !slices.Equal(got, []string{people, teams}) {
		t.Errorf("--only teams,people = %v, want people, teams", got)
	}
	if got := names(engine.MigrateOptions{From: all[len(all)-2]}); !slices.Equal(got, all[len(all)-2:]) {
		t.Errorf("--from %s = %v", all[len(all)-2], got)
	}
	if got := names(engine.MigrateOptions{From: all[1], Only: []string{all[0], all[2]}}); !slices.Equal(got, all[2:3]) {
		t.Errorf("--from %s --only %s,%s = %v", all[1], all[0], all[2], got)
	}
	// An unknown name is refused, and so is a child: it has no command of its own, it migrates
	// with its parent.
	for _, bad := range []engine.MigrateOptions{{Only: []string{"users"}}, {From: teamMembers}} {
		_, err := reg.MigrateEntities(bad)
		if !errors.Is(err, engine.ErrUnknownEntity) || !strings.Contains(err.Error(), strings.Join(all, ", ")) {
			t.Errorf("%+v = %v, want ErrUnknownEntity listing %v", bad, err, all)
		}
	}
}
