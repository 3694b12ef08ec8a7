package bitrix_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestMigrationSpeaks: verify logs its progress (done of total, rate, ETA) step by step, as get
// and set do, and the migration's time left counts set and verify at this run's pace once an
// entity has been measured, not get's calls alone.
func TestMigrationSpeaks(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 1200, Groups: 4, Seed: 7})
	if err := v.engine().Migrate(v.ctx, engine.MigrateOptions{Only: []string{bitrix.Users, bitrix.Groups}}); err != nil {
		t.Fatal(err)
	}
	log := v.log.String()
	// users: 1,200 records, compared 500 at a time.
	for _, want := range []string{
		`msg=progress migrate_entity="1 of 2" entity=users phase=verify done=1200 step="target listing" total=1200`,
		`msg=progress migrate_entity="1 of 2" entity=users phase=verify done=1000 step=compare total=1200`,
		`msg=progress migrate_entity="1 of 2" entity=users phase=verify done=1200 step=compare total=1200`,
		`msg=progress migrate_entity="2 of 2" entity=groups phase=verify done=4 step="references: owner" total=4`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	if !regexp.MustCompile(`phase=verify done=1000 step=compare total=1200 rate_per_s=[0-9.]+ eta_s=[0-9.]+`).MatchString(log) {
		t.Errorf("verify's progress has no rate and ETA")
	}
	started := regexp.MustCompile(`msg="migration started" .*plan_eta_s=([0-9.]+) eta_s=([0-9.]+) eta_basis="plan: get only`).FindStringSubmatch(log)
	if started == nil || started[1] != started[2] {
		t.Errorf("migration started: %q, want the plan's get time alone, said so, before anything is measured", started)
	}
	m := regexp.MustCompile(`msg="migration: entity started" migrate_entity="2 of 2" entity=groups .*plan_eta_s=([0-9.]+) eta_s=([0-9.]+) eta_basis="plan for get, this run's pace for set and verify" set_verify_ms_per_record=([0-9.]+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the second entity's line has no ETA from this run's pace\n%s", log)
	}
	plan, _ := strconv.ParseFloat(m[1], 64)
	eta, _ := strconv.ParseFloat(m[2], 64)
	perRecord, _ := strconv.ParseFloat(m[3], 64)
	if perRecord <= 0 || eta < plan {
		t.Errorf("groups' time left = %v s with %v ms a record, want at least get's %v s and a measured pace", eta, perRecord, plan)
	}
}
