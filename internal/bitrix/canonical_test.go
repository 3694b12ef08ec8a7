package bitrix_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
)

// canonicalEntities are migrated by TestRealShapesReachTheTargetAsTidyOnes, in order.
var canonicalEntities = []string{bitrix.Users, bitrix.Groups, bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies,
	bitrix.Contacts, bitrix.Tasks, bitrix.Feed}

// migrateCanonical runs a portal's users, contacts and tasks (and what they require) through every
// phase into a target whose ids depend only on the keys.
func migrateCanonical(t *testing.T, opts bitrixfake.Options) *env {
	v := newEnvTarget(t, opts, targetfake.Options{StableIDs: true})
	e := v.engine()
	for _, entity := range canonicalEntities {
		if err := e.Run(v.ctx, entity); err != nil {
			t.Fatalf("run %s (real shapes %v): %v", entity, opts.RealShapes, err)
		}
	}
	return v
}

// TestRealShapesReachTheTargetAsTidyOnes: a portal answering in the shapes recorded from real
// portals (empty fields left out, null and "" swapped, ACTIVE and Y/N flags as the other kind of
// boolean, {} for an empty date, date-only fields as shifted datetimes, numbers and ids as
// strings) gives the target exactly the payloads, and checksums, the tidy shapes give.
func TestRealShapesReachTheTargetAsTidyOnes(t *testing.T) {
	t.Parallel()
	opts := bitrixfake.Options{Users: 40, Groups: 4, Companies: 10, Contacts: 30, Tasks: 40, TaskComments: 2, Posts: 20, Seed: 41}
	real := opts
	real.RealShapes = true
	tidy, shaped := migrateCanonical(t, opts), migrateCanonical(t, real)

	for _, entity := range []string{bitrix.Users, bitrix.Contacts, bitrix.Tasks, bitrix.TaskChecklists, bitrix.TaskComments,
		bitrix.Feed, bitrix.FeedComments} {
		// The portals did answer differently: else this test proves nothing.
		if entity == bitrix.Users || entity == bitrix.Contacts || entity == bitrix.Tasks || entity == bitrix.Feed {
			differ := tidy.count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, entity) -
				shaped.count(`SELECT count(*) FROM bitrix_records r WHERE entity = $1 AND payload = ANY($2::jsonb[])`,
					entity, tidy.payloads(entity))
			if differ == 0 {
				t.Errorf("%s: the real shapes left every record as the tidy ones", entity)
			}
		}
		want, got := tidy.target.Records(entity), shaped.target.Records(entity)
		if len(want) == 0 || len(want) != len(got) {
			t.Fatalf("%s: %d records on the tidy portal's target, %d on the real one's", entity, len(want), len(got))
		}
		for i := range want {
			if want[i].Key != got[i].Key || string(want[i].Payload) != string(got[i].Payload) || want[i].Checksum != got[i].Checksum {
				t.Errorf("%s %s: the real shapes sent\n%s\nthe tidy ones\n%s", entity, want[i].Key, got[i].Payload, want[i].Payload)
			}
		}
	}
	// The canonical forms themselves (docs/target-import-api.md, "Canonical values").
	var nulls, dates int
	for _, r := range tidy.target.Records(bitrix.Users) {
		p := payloadOf(t, r.Payload)
		if _, ok := p["ACTIVE"].(bool); !ok {
			t.Errorf("%s: ACTIVE is %v, want a boolean", r.Key, p["ACTIVE"])
		}
		if p["SECOND_NAME"] == nil {
			nulls++
		}
		if s, ok := p["UF_EMPLOYMENT_DATE"].(string); ok {
			dates++
			if len(s) != len("2006-01-02") {
				t.Errorf("%s: UF_EMPLOYMENT_DATE %q, want a date", r.Key, s)
			}
		}
		for k, v := range p {
			if s, ok := v.(string); ok && s == "" {
				t.Errorf("%s: %s is \"\", want null", r.Key, k)
			}
		}
	}
	if nulls == 0 || dates == 0 {
		t.Errorf("no user without a middle name (%d) or with an employment date (%d): the portal should have some", nulls, dates)
	}
}

// payloads returns the stored payloads of an entity's records, as text.
func (v *env) payloads(entity string) []string {
	v.t.Helper()
	rows, err := v.pool.Query(v.ctx, `SELECT payload::text FROM bitrix_records WHERE entity = $1`, entity)
	if err != nil {
		v.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			v.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestRerunOverRecordsStoredBeforeCanonicalPayloads: records stored and imported by a version
// that sent "no value" as "" and computed get's checksum over empty fields converge on a rerun:
// each is sent again at most once, under its key (updated, never created twice), verify compares
// canonical values and finds the target's old shapes no difference, and a second rerun sends
// nothing.
func TestRerunOverRecordsStoredBeforeCanonicalPayloads(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 30, Seed: 42})
	e := v.engine()
	if err := e.Run(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	users := v.target.Count(bitrix.Users)
	// What the earlier version left: the target's payloads with "" where there is no value, and
	// stored checksums that the new rule does not reproduce.
	old := 0
	for _, r := range v.target.Records(bitrix.Users) {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		for k, val := range p {
			if string(val) == "null" && !strings.HasPrefix(k, "UF_USR") {
				if err := v.target.Corrupt(bitrix.Users, r.Key, k, ""); err != nil {
					t.Fatal(err)
				}
				old++
			}
		}
	}
	if old == 0 {
		t.Fatal("no user field without a value: nothing to converge")
	}
	if _, err := v.pool.Exec(v.ctx, `UPDATE bitrix_records SET checksum = 'legacy-' || checksum WHERE entity = $1`, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	before := v.target.Stats()
	if err := e.Run(v.ctx, bitrix.Users); err != nil {
		t.Fatalf("rerun over records stored before: %v", err)
	}
	after := v.target.Stats()
	if after.Created != before.Created || after.Duplicates != 0 || v.target.Count(bitrix.Users) != users {
		t.Errorf("rerun created %d records (%d duplicates), the target holds %d users, want %d",
			after.Created-before.Created, after.Duplicates, v.target.Count(bitrix.Users), users)
	}
	if sent := after.Items - before.Items; sent > users {
		t.Errorf("rerun sent %d items for %d users: some more than once", sent, users)
	}
	if err := e.Run(v.ctx, bitrix.Users); err != nil {
		t.Fatalf("second rerun: %v", err)
	}
	if again := v.target.Stats(); again.Items != after.Items {
		t.Errorf("second rerun sent %d items, want none", again.Items-after.Items)
	}
}
