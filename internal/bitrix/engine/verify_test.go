package engine_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

func TestVerifyCatchesWhatTheTargetLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entity  string
		break_  func(w *enginetest.World) (sourceID string)
		check   func(t *testing.T, r engine.VerifyReport, sourceID string)
		problem string
	}{
		{
			name: "a missing member", entity: teams,
			break_: func(w *enginetest.World) string {
				g := w.Portal.GroupIDs()[2]
				m := w.Portal.ActiveMembers(g)[1]
				id := strconv.Itoa(g) + ":" + strconv.Itoa(m.UserID)
				if !w.Target.Delete(teamMembers, "source:team_members:"+id) {
					w.T.Fatalf("no membership %s on the target", id)
				}
				return id
			},
			check: func(t *testing.T, r engine.VerifyReport, id string) {
				group, user, _ := strings.Cut(id, ":")
				m, ok := r.Child(teamMembers)
				if !ok || m.Missing != 1 || len(m.Short) != 1 || m.Short[0].Parent != group || m.Short[0].Missing[0] != user ||
					m.Read != m.Target+1 {
					t.Errorf("members coverage = %+v, want user %s missing in group %s", m, user, group)
				}
			},
			problem: "1 memberships of 1 teams are missing on the target",
		},
		{
			name: "an owner changed on the target", entity: teams,
			break_: func(w *enginetest.World) string {
				id := strconv.Itoa(w.Portal.GroupIDs()[3])
				if err := w.Target.Corrupt(teams, "source:teams:"+id, "OWNER_ID", "999999"); err != nil {
					w.T.Fatal(err)
				}
				return id
			},
			check: func(t *testing.T, r engine.VerifyReport, id string) {
				if len(r.UnresolvedRefs) != 1 || r.UnresolvedRefs[0].SourceID != id ||
					!strings.Contains(r.UnresolvedRefs[0].Reason, `owner on the target is "999999"`) {
					t.Errorf("unresolved owners = %+v, want group %s", r.UnresolvedRefs, id)
				}
			},
			problem: "1 teams have an unresolved owner",
		},
		{
			name: "a corrupted record", entity: people,
			break_: func(w *enginetest.World) string {
				id := strconv.Itoa(w.Portal.UserIDs()[10])
				if err := w.Target.Corrupt(people, "source:people:"+id, "LAST_NAME", "Подменённый"); err != nil {
					w.T.Fatal(err)
				}
				return id
			},
			check: func(t *testing.T, r engine.VerifyReport, id string) {
				if r.MismatchedRecords != 1 || len(r.Mismatches) != 1 || r.Mismatches[0].SourceID != id ||
					r.Mismatches[0].Field != "LAST_NAME" || r.Mismatches[0].Got != `"Подменённый"` || r.Mismatches[0].TargetID == "" {
					t.Errorf("mismatches = %+v, want LAST_NAME of user %s", r.Mismatches, id)
				}
			},
			problem: "1 of 60 sampled records differ from the target",
		},
		{
			name: "a record deleted on the target", entity: people,
			break_: func(w *enginetest.World) string {
				id := strconv.Itoa(w.Portal.UserIDs()[20])
				w.Target.Delete(people, "source:people:"+id)
				return id
			},
			check: func(t *testing.T, r engine.VerifyReport, id string) {
				if r.TargetCount != 59 || r.Expected != 60 {
					t.Errorf("counts: target %d, expected %d; want 59 and 60", r.TargetCount, r.Expected)
				}
			},
			problem: "target holds 59 people, expected 60",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, bitrixfake.Options{Users: 60, Groups: 8, Seed: 21})
			e := w.Engine(func(e *engine.Config) { e.SampleSize = 1000 }) // every record: the corrupted one must be in the sample
			w.Migrate(e, people, teams)
			if !w.Inventory(tt.entity).Verified {
				t.Fatalf("%s not verified after a clean migration", tt.entity)
			}
			id := tt.break_(w)
			err := e.Phase(w.Ctx, tt.entity, "verify")
			if !errors.Is(err, engine.ErrNotVerified) || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("verify = %v, want ErrNotVerified saying %q", err, tt.problem)
			}
			inv := w.Inventory(tt.entity)
			if inv.Verified || inv.LastVerify == nil || inv.LastVerify.Clean() {
				t.Fatalf("inventory after a failed verify = %+v, want not verified with the report", inv)
			}
			tt.check(t, *inv.LastVerify, id)
			if tt.name == "a corrupted record" && w.Metric(`verify_sample_mismatch_total{entity=people}`) != 1 {
				t.Errorf("verify_sample_mismatch_total{entity=people} = %v, want 1", w.Metric(`verify_sample_mismatch_total{entity=people}`))
			}
		})
	}
}

func TestVerifyUnderTestLimitExpectsWhatWasRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 300, Groups: 10, Seed: 22})
	e := w.Engine(func(e *engine.Config) { e.TestLimit = 25 })
	w.Phases(e, people, "get", "set", "verify")
	inv := w.Inventory(people)
	if !inv.Verified || inv.LastVerify.SourceCount != 300 || inv.LastVerify.Expected != 25 || *inv.LastVerify.TestLimit != 25 {
		t.Errorf("limited verify = %+v", inv.LastVerify)
	}
	// Teams within the limit pull in people beyond it: people need set and verify again first.
	e = w.Engine(func(e *engine.Config) { e.TestLimit = 2 })
	w.Phases(e, teams, "get")
	if err := e.Phase(w.Ctx, teams, "set"); !errors.Is(err, engine.ErrPrerequisite) {
		t.Fatalf("teams set with pulled-in people not imported = %v, want a refusal", err)
	}
	w.Phases(e, people, "set", "verify")
	w.Phases(e, teams, "set", "verify")
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE status <> 'IMPORT_OK'`); n != 0 {
		t.Errorf("%d records not imported", n)
	}
}
