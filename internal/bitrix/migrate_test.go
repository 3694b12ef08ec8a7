package bitrix_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// What `bitrix migrate --only/--from` runs: command entities in the registry's order, whatever
// order they are named in, and a refusal listing the valid names for an unknown one.
func TestMigrateEntities(t *testing.T) {
	t.Parallel()
	reg := bitrix.Catalog()
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
	if got := names(engine.MigrateOptions{Only: []string{bitrix.Groups, bitrix.Users}}); !slices.Equal(got, []string{bitrix.Users, bitrix.Groups}) {
		t.Errorf("--only groups,users = %v, want users, groups", got)
	}
	if got := names(engine.MigrateOptions{From: all[len(all)-2]}); !slices.Equal(got, all[len(all)-2:]) {
		t.Errorf("--from %s = %v", all[len(all)-2], got)
	}
	if got := names(engine.MigrateOptions{From: all[1], Only: []string{all[0], all[2]}}); !slices.Equal(got, all[2:3]) {
		t.Errorf("--from %s --only %s,%s = %v", all[1], all[0], all[2], got)
	}
	// A child has no command of its own: it migrates with its parent.
	for _, bad := range []engine.MigrateOptions{{Only: []string{"people"}}, {From: "group_members"}} {
		_, err := reg.MigrateEntities(bad)
		if !errors.Is(err, engine.ErrUnknownEntity) || !strings.Contains(err.Error(), strings.Join(all, ", ")) {
			t.Errorf("%+v = %v, want ErrUnknownEntity listing %v", bad, err, all)
		}
	}
}
