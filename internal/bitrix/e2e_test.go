package bitrix_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

func TestUsersAndGroupsEndToEnd(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 300, Groups: 40, Seed: 7})
	e := v.engine()
	for _, entity := range []string{bitrix.Users, bitrix.Groups} {
		if err := e.Run(v.ctx, entity); err != nil {
			t.Fatalf("run %s: %v", entity, err)
		}
	}
	t.Logf("%+v", v.target.Stats())
	rep, err := e.Report(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
}
