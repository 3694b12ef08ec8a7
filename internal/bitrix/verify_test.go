package bitrix_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

func TestVerifyCatchesWhatTheTargetLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entity  string
		break_  func(v *env) (sourceID string)
		check   func(t *testing.T, r engine.VerifyReport, sourceID string)
		problem string
	}{
		{
			name: "a missing member", entity: bitrix.Groups,
			break_: func(v *env) string {
				g := v.portal.GroupIDs()[2]
				m := v.portal.ActiveMembers(g)[1]
				id := strconv.Itoa(g) + ":" + strconv.Itoa(m.UserID)
				if !v.target.Delete(bitrix.GroupMembers, "source:group_members:"+id) {
					v.t.Fatalf("no membership %s on the target", id)
				}
				return id
			},
			check: func(t *testing.T, r engine.VerifyReport, id string) {
				group, user, _ := strings.Cut(id, ":")
				m, ok := r.Child(bitrix.GroupMembers)
				if !ok || m.Missing != 1 || len(m.Short) != 1 || m.Short[0].Parent != group || m.Short[0].Missing[0] != user ||
					m.Read != m.Target+1 {
					t.Errorf("members coverage = %+v, want user %s missing in group %s", m, user, group)
				}
			},
			problem: "1 memberships of 1 groups are missing on the target",
		},
		{
			name: "an owner changed on the target", entity: bitrix.Groups,
			break_: func(v *env) string {
				id := strconv.Itoa(v.portal.GroupIDs()[3])
				if err := v.target.Corrupt(bitrix.Groups, "source:groups:"+id, "OWNER_ID", "999999"); err != nil {
					v.t.Fatal(err)
				}
				return id
			},
			check: func(t *testing.T, r engine.VerifyReport, id string) {
				if len(r.UnresolvedRefs) != 1 || r.UnresolvedRefs[0].SourceID != id ||
					!strings.Contains(r.UnresolvedRefs[0].Reason, `owner on the target is "999999"`) {
					t.Errorf("unresolved owners = %+v, want group %s", r.UnresolvedRefs, id)
				}
			},
			problem: "1 groups have an unresolved owner",
		},
		{
			name: "a corrupted record", entity: bitrix.Users,
			break_: func(v *env) string {
				id := strconv.Itoa(v.portal.UserIDs()[10])
				if err := v.target.Corrupt(bitrix.Users, "source:users:"+id, "LAST_NAME", "Подменённый"); err != nil {
					v.t.Fatal(err)
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
			name: "a record deleted on the target", entity: bitrix.Users,
			break_: func(v *env) string {
				id := strconv.Itoa(v.portal.UserIDs()[20])
				v.target.Delete(bitrix.Users, "source:users:"+id)
				return id
			},
			check: func(t *testing.T, r engine.VerifyReport, id string) {
				if r.TargetCount != 59 || r.Expected != 60 {
					t.Errorf("counts: target %d, expected %d; want 59 and 60", r.TargetCount, r.Expected)
				}
			},
			problem: "target holds 59 users, expected 60",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t, bitrixfake.Options{Users: 60, Groups: 8, Seed: 21})
			e := v.engine(func(c *engine.Config) {
				c.SampleSize = 1000 // every record: the corrupted one must be in the sample
			})
			v.migrateUsers(e)
			v.phases(e, bitrix.Groups, "get", "set", "verify")
			if !v.inventory(tt.entity).Verified {
				t.Fatalf("%s not verified after a clean migration", tt.entity)
			}
			id := tt.break_(v)
			err := e.Phase(v.ctx, tt.entity, "verify")
			if !errors.Is(err, engine.ErrNotVerified) || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("verify = %v, want ErrNotVerified saying %q", err, tt.problem)
			}
			inv := v.inventory(tt.entity)
			if inv.Verified || inv.LastVerify == nil || inv.LastVerify.Clean() {
				t.Fatalf("inventory after a failed verify = %+v, want not verified with the report", inv)
			}
			tt.check(t, *inv.LastVerify, id)
			if tt.name == "a corrupted record" && v.metric(`verify_sample_mismatch_total{entity=users}`) != 1 {
				t.Errorf("verify_sample_mismatch_total{entity=users} = %v, want 1", v.metric(`verify_sample_mismatch_total{entity=users}`))
			}
		})
	}
}

func TestVerifyUnderTestLimitExpectsWhatWasRead(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 300, Groups: 10, Seed: 22})
	e := v.engine(func(c *engine.Config) {
		c.TestLimit = 25
	})
	v.phases(e, bitrix.Users, "get", "set", "verify")
	inv := v.inventory(bitrix.Users)
	if !inv.Verified || inv.LastVerify.SourceCount != 300 || inv.LastVerify.Expected != 25 || *inv.LastVerify.TestLimit != 25 {
		t.Errorf("limited verify = %+v", inv.LastVerify)
	}
	// Groups within the limit pull in users beyond it: users need set and verify again first.
	e = v.engine(func(c *engine.Config) { c.TestLimit = 2 })
	v.phases(e, bitrix.Groups, "get")
	if err := e.Phase(v.ctx, bitrix.Groups, "set"); !errors.Is(err, engine.ErrPrerequisite) {
		t.Fatalf("groups set with pulled-in users not imported = %v, want a refusal", err)
	}
	v.phases(e, bitrix.Users, "set", "verify")
	v.phases(e, bitrix.Groups, "set", "verify")
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE status <> 'IMPORT_OK'`); n != 0 {
		t.Errorf("%d records not imported", n)
	}
}
