package engine_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// Every synthetic entity migrates cleanly from the fake portal: the world's entities are sound
// for the tests that break them.
func TestSyntheticEntitiesMigrate(t *testing.T) {
	t.Parallel()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 60, Groups: 6, Posts: 20, Tasks: 40,
		Companies: 12, Workflows: 3, Seed: 7}})
	e := w.Engine()
	for _, ent := range w.Registry.Commands() {
		w.Phases(e, ent.Name, "fields-get", "fields-set")
		w.Migrate(e, ent.Name)
		for _, member := range w.Registry.Family(ent) {
			if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, member.Name); n == 0 {
				t.Errorf("%s: no records read", member.Name)
			}
		}
	}
}
