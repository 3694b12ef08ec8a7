package engine_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// The plan's counts are the portal's, and its calls are the calls get then makes, for every
// kind of lister: ID scans with a child fetched per page of parents, offset pages with a walk per
// key and with a child listed on its own, one listing per record.
func TestPlanForetellsWhatGetDoes(t *testing.T) {
	t.Parallel()
	const users, groups = 6_010, 120
	w := newWorld(t, bitrixfake.Options{Users: users, Groups: groups, Posts: 150, Tasks: 300, Companies: 130, Workflows: 4, Seed: 9})
	e := w.Engine()
	planOf := func() map[string]engine.EntityPlan {
		t.Helper()
		before := w.Portal.Stats().Requests
		p, err := e.Plan(w.Ctx, rest.DefaultRate())
		if err != nil {
			t.Fatal(err)
		}
		// About one cheap call per entity with a count of its own.
		if got := w.Portal.Stats().Requests - before; p.PlanCalls != got || got > len(w.Registry.All()) {
			t.Errorf("the plan reports %d calls of its own, made %d; want a handful", p.PlanCalls, got)
		}
		if p.Seconds <= 0 || p.Calls <= 0 {
			t.Errorf("plan totals: %+v", p)
		}
		plans := map[string]engine.EntityPlan{}
		calls := 0
		for _, ep := range p.Entities {
			plans[ep.Entity] = ep
			calls += ep.Calls
			if ep.Seconds != float64(ep.Calls)/2 {
				t.Errorf("%s: %d calls planned at %v s, want %v at 2 a second", ep.Entity, ep.Calls, ep.Seconds, float64(ep.Calls)/2)
			}
		}
		if calls != p.Calls {
			t.Errorf("the plan's calls add up to %d, it says %d", calls, p.Calls)
		}
		return plans
	}
	first := planOf()
	if first[people].Records != users || first[teams].Records != groups || first[teamMembers].Records != -1 ||
		first[enginetest.FirmNotes].Records != -1 || first[enginetest.PostAudiences].Records != -1 {
		t.Errorf("plan records: %+v", first)
	}
	// The walk's keys are planned from the portal's counts of what they come from before those
	// are read: one key for all employees, one per team and per person, 50 to a call.
	if walks := (users + groups + 1 + 49) / 50; first[enginetest.PostAudiences].Calls != walks {
		t.Errorf("the audiences' walk is planned at %d calls before people and teams are read, want %d", first[enginetest.PostAudiences].Calls, walks)
	}
	for _, ent := range w.Registry.Commands() {
		want, walked := 0, false
		for _, member := range w.Registry.Family(ent) {
			want += first[member.Name].Calls
			walked = walked || member.Walk != nil
		}
		before := w.Portal.Stats().Requests
		st, err := e.Get(w.Ctx, ent.Name)
		if err != nil {
			t.Fatal(err)
		}
		got := w.Portal.Stats().Requests - before
		// A key with more than a page costs more than planned: at most one call per 50 rows its
		// children read.
		extra := 0
		if walked {
			for _, child := range w.Registry.Children(ent) {
				extra += (st.Of(child.Name).Rows + 49) / 50
			}
		}
		if got < want || got > want+extra {
			t.Errorf("%s get made %d calls, the plan said %d (and up to %d more for keys past one page)", ent.Name, got, want, extra)
		}
		for _, member := range w.Registry.Family(ent) {
			if r := first[member.Name].Records; r >= 0 && r != int64(st.Of(member.Name).Rows) {
				t.Errorf("plan: %d %s, get read %d", r, member.Name, st.Of(member.Name).Rows)
			}
		}
	}
	// Once read, the walk's keys and the records listed one by one are counted from what was
	// read: the same calls as planned from the portal's counts, less, now that every get is
	// complete (a rerun), what the rerun's prefetch asks up front: the members of the teams'
	// first page (engine/prefetch.go).
	again := planOf()
	for _, name := range []string{enginetest.PostAudiences, enginetest.FirmNotes, teamMembers} {
		want := first[name].Calls
		if name == teamMembers {
			want--
		}
		if again[name].Calls != want {
			t.Errorf("%s: %d calls planned once read, want %d (%d before)", name, again[name].Calls, want, first[name].Calls)
		}
	}
}
