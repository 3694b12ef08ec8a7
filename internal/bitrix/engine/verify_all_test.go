package engine_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/retry"
)

const (
	posts         = enginetest.Posts
	postAudiences = enginetest.PostAudiences
)

// Verify compares every record with the target, not a sample: one record corrupted, one deleted
// and one added behind the importer's back, in each entity, are each named in the report, with
// the field, want and got for the corrupted one, whichever records they are. The sample is off
// (size 1), so only the exhaustive comparison can find them.
func TestVerifyNamesEveryRecordTheTargetChanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 40, Groups: 6, Posts: 30, Seed: 31})
	e := w.Engine(func(e *engine.Config) {
		e.RetryPolicy = retry.Policy{Delays: []time.Duration{0, time.Millisecond, time.Millisecond}}
	})
	w.Migrate(e, people, teams)
	w.Phases(e, posts, "get", "set")
	e = w.Engine(func(e *engine.Config) { e.SampleSize = 1 })
	seed := time.Now().UnixNano()
	rnd := rand.New(rand.NewPCG(uint64(seed), 7))
	t.Logf("records picked with seed %d", seed)

	type broken struct{ corrupted, deleted, added string }
	want := map[string]broken{}
	for _, entity := range []string{people, teams, teamMembers, posts, postAudiences} {
		recs := w.Target.Records(entity)
		if len(recs) < 3 {
			t.Fatalf("only %d %s on the target", len(recs), entity)
		}
		i := rnd.IntN(len(recs) - 1)
		c, d := recs[i], recs[i+1]
		if err := w.Target.Corrupt(entity, c.Key, "corrupted_by_test", "yes"); err != nil {
			t.Fatal(err)
		}
		w.Target.Delete(entity, d.Key)
		added := "source:" + entity + ":99999999"
		w.Target.Put(entity, added, json.RawMessage(`{"NAME":"not from the portal"}`))
		want[entity] = broken{c.Key, d.Key, added}
	}

	for _, command := range []string{people, teams, posts} {
		r, err := e.Verify(w.Ctx, command)
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
	for _, entity := range []string{people, teams, teamMembers, posts, postAudiences} {
		counted += w.Metric("verify_sample_mismatch_total{entity=" + entity + "}")
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
	w := newWorld(t, bitrixfake.Options{Users: 1100, Seed: 32})
	e := w.Engine(func(e *engine.Config) { e.SampleSize = 1 })
	w.Migrate(e, people)
	last := w.Target.Records(people)
	key := last[len(last)-1].Key // on the second page of 1,000
	if err := w.Target.Corrupt(people, key, "LAST_NAME", "Подменённый"); err != nil {
		t.Fatal(err)
	}
	r, err := e.Verify(w.Ctx, people)
	if err != nil {
		t.Fatal(err)
	}
	if r.Checked != 1100 || r.DifferingCount != 1 || len(r.Differing) != 1 || r.Differing[0].Field != "LAST_NAME" ||
		r.Differing[0].SourceID != strings.TrimPrefix(key, "source:people:") {
		t.Errorf("checked %d, differing %d %+v; want 1100 checked and %s's LAST_NAME", r.Checked, r.DifferingCount, r.Differing, key)
	}
}
