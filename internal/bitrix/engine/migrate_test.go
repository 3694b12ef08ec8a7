package engine_test

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
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

// TestMigrationSpeaks: verify logs its progress (done of total, rate, ETA) step by step, as get
// and set do, and the migration's time left counts set and verify at this run's pace once an
// entity has been measured, not get's calls alone.
func TestMigrationSpeaks(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 1200, Groups: 4, Seed: 7})
	if err := w.Engine().Migrate(w.Ctx, engine.MigrateOptions{Only: []string{people, teams}}); err != nil {
		t.Fatal(err)
	}
	log := w.Log.String()
	// people: 1,200 records, compared 500 at a time.
	for _, want := range []string{
		`msg=progress migrate_entity="1 of 2" entity=people phase=verify done=1200 step="target listing" total=1200`,
		`msg=progress migrate_entity="1 of 2" entity=people phase=verify done=1000 step=compare total=1200`,
		`msg=progress migrate_entity="1 of 2" entity=people phase=verify done=1200 step=compare total=1200`,
		`msg=progress migrate_entity="2 of 2" entity=teams phase=verify done=4 step="references: owner" total=4`,
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
	m := regexp.MustCompile(`msg="migration: entity started" migrate_entity="2 of 2" entity=teams .*plan_eta_s=([0-9.]+) eta_s=([0-9.]+) eta_basis="plan for get, this run's pace for set and verify" set_verify_ms_per_record=([0-9.]+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the second entity's line has no ETA from this run's pace\n%s", log)
	}
	plan, _ := strconv.ParseFloat(m[1], 64)
	eta, _ := strconv.ParseFloat(m[2], 64)
	perRecord, _ := strconv.ParseFloat(m[3], 64)
	if perRecord <= 0 || eta < plan {
		t.Errorf("teams' time left = %v s with %v ms a record, want at least get's %v s and a measured pace", eta, perRecord, plan)
	}
}

// A migration runs every phase of the entities it selects in the registry's order, and stops at
// the first that fails, naming the entity, its place, the phase and the records that keep it from
// being verified. A rerun resumes: what was verified and did not change sends nothing again.
func TestMigrateStopsAtTheFirstFailureAndResumes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 40, Groups: 5, Seed: 8})
	bad := strconv.Itoa(w.Portal.UserIDs()[3])
	w.Portal.SetUserField(w.Portal.UserIDs()[3], "PERSONAL_BIRTHDAY", "31/02/1990")
	o := engine.MigrateOptions{Only: []string{teams, people}}
	err := w.Engine().Migrate(w.Ctx, o)
	merr, ok := errors.AsType[*engine.MigrateError](err)
	if !ok || !errors.Is(err, engine.ErrNotVerified) || merr.Entity != people || merr.Phase != "verify" || merr.K != 1 || merr.N != 2 ||
		!slices.Equal(merr.Records, []string{"people " + bad}) || merr.More != 0 {
		t.Fatalf("migrate = %v, want a MigrateError at people (1 of 2), verify, naming person %s", err, bad)
	}
	for _, want := range []string{"bitrix migrate stopped at people (entity 1 of 2), verify:", "records that keep it from being verified: people " + bad,
		"ingest status ack bitrix"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("migrate's error %q lacks %q", err, want)
		}
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'teams'`); n != 0 {
		t.Errorf("%d teams read after people failed, want none", n)
	}

	// The date is fixed on the portal: the rerun reads the person again, imports it alone and
	// goes on to teams.
	w.Portal.SetUserField(w.Portal.UserIDs()[3], "PERSONAL_BIRTHDAY", "1990-02-28T00:00:00+03:00")
	before := w.Target.Stats()
	if err := w.Engine().Migrate(w.Ctx, o); err != nil {
		t.Fatal(err)
	}
	if got := w.Target.Stats().Items - before.Items; got != 1+5+w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = 'team_members'`) {
		t.Errorf("the rerun sent %d items, want the person left behind, the teams and their members", got)
	}
	if !w.Inventory(people).Verified || !w.Inventory(teams).Verified {
		t.Error("people and teams not verified after the rerun")
	}
	before = w.Target.Stats()
	if err := w.Engine().Migrate(w.Ctx, o); err != nil {
		t.Fatal(err)
	}
	if got := w.Target.Stats().Items - before.Items; got != 0 {
		t.Errorf("a rerun with nothing changed sent %d items", got)
	}
	if !strings.Contains(w.Log.String(), `msg="migration verified" entities=2`) {
		t.Error("no line saying the migration was verified")
	}
}
