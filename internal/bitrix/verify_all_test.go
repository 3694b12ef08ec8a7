package bitrix_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// Verify compares every record with the target, not a sample: one record corrupted, one deleted
// and one added behind the importer's back, in each entity, are each named in the report, with
// the field, want and got for the corrupted one, whichever records they are. The sample is off
// (size 1), so only the exhaustive comparison can find them.
func TestVerifyNamesEveryRecordTheTargetChanged(t *testing.T) {
	t.Parallel()
	v, e := chatEnv(t, bitrixfake.Options{Users: 40, Groups: 6, Chats: 12, MessagesPerChat: 30, Seed: 31})
	v.phases(e, bitrix.Chats, "get", "set")
	e = v.engine(chatRetry, func(c *engine.Config) { c.SampleSize = 1 })
	seed := time.Now().UnixNano()
	rnd := rand.New(rand.NewPCG(uint64(seed), 7))
	t.Logf("records picked with seed %d", seed)

	type broken struct{ corrupted, deleted, added string }
	want := map[string]broken{}
	for _, entity := range []string{bitrix.Users, bitrix.Groups, bitrix.GroupMembers, bitrix.Chats, bitrix.ChatMessages} {
		recs := v.target.Records(entity)
		if len(recs) < 3 {
			t.Fatalf("only %d %s on the target", len(recs), entity)
		}
		i := rnd.IntN(len(recs) - 1)
		c, d := recs[i], recs[i+1]
		if err := v.target.Corrupt(entity, c.Key, "corrupted_by_test", "yes"); err != nil {
			t.Fatal(err)
		}
		v.target.Delete(entity, d.Key)
		added := "source:" + entity + ":99999999"
		v.target.Put(entity, added, json.RawMessage(`{"NAME":"not from the portal"}`))
		want[entity] = broken{c.Key, d.Key, added}
	}

	for _, command := range []string{bitrix.Users, bitrix.Groups, bitrix.Chats} {
		r, err := e.Verify(v.ctx, command)
		if err != nil {
			t.Fatal(err)
		}
		if r.Clean() {
			t.Errorf("%s verify is clean after the target was changed", command)
		}
		for entity, b := range want {
			if !strings.HasPrefix(entity, strings.TrimSuffix(command, "s")) {
				continue
			}
			id := func(key string) string { return strings.TrimPrefix(key, "source:"+entity+":") }
			if !hasIssue(r.Missing, entity, id(b.deleted)) {
				t.Errorf("%s verify: deleted %s not among missing %+v", command, b.deleted, r.Missing)
			}
			if !hasIssue(r.Extra, entity, id(b.added)) {
				t.Errorf("%s verify: added %s not among extra %+v", command, b.added, r.Extra)
			}
			found := false
			for _, m := range r.Differing {
				if m.Entity == entity && m.SourceID == id(b.corrupted) && m.Field == "corrupted_by_test" &&
					m.Want == "(absent)" && m.Got == `"yes"` && m.TargetID != "" {
					found = true
				}
			}
			if !found {
				t.Errorf("%s verify: corrupted %s not among differing %+v", command, b.corrupted, r.Differing)
			}
		}
	}
	var counted float64
	for _, entity := range []string{bitrix.Users, bitrix.Groups, bitrix.GroupMembers, bitrix.Chats, bitrix.ChatMessages} {
		counted += v.metric("verify_sample_mismatch_total{entity=" + entity + "}")
	}
	if counted < 15 {
		t.Errorf("verify_sample_mismatch_total = %v, want at least the 15 records changed", counted)
	}
}

func hasIssue(issues []engine.RecordIssue, entity, sourceID string) bool {
	for _, i := range issues {
		if i.Entity == entity && i.SourceID == sourceID {
			return true
		}
	}
	return false
}

// The listing is paged: verify walks every page of a target holding more than one.
func TestVerifyWalksEveryPageOfTheTargetListing(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 1100, Seed: 32})
	e := v.engine(func(c *engine.Config) {
		c.SampleSize = 1
	})
	v.migrateUsers(e)
	last := v.target.Records(bitrix.Users)
	key := last[len(last)-1].Key // on the second page of 1,000
	if err := v.target.Corrupt(bitrix.Users, key, "LAST_NAME", "Подменённый"); err != nil {
		t.Fatal(err)
	}
	r, err := e.Verify(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	if r.Checked != 1100 || r.DifferingCount != 1 || len(r.Differing) != 1 || r.Differing[0].Field != "LAST_NAME" ||
		r.Differing[0].SourceID != strings.TrimPrefix(key, "source:users:") {
		t.Errorf("checked %d, differing %d %+v; want 1100 checked and %s's LAST_NAME", r.Checked, r.DifferingCount, r.Differing, key)
	}
}
