package bitrix_test

import (
	"errors"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// listedRecords is every record a verify report names as keeping the entity from being verified
// or as not migrated, by entity and portal id: what a person reads in `bitrix status` and
// acknowledges.
func listedRecords(r engine.VerifyReport) map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	add := func(is []engine.RecordIssue) {
		for _, i := range is {
			if k := i.Entity + " " + i.SourceID; !seen[k] {
				seen[k] = true
				out[i.Entity] = append(out[i.Entity], i.SourceID)
			}
		}
	}
	add(r.NotImported)
	add(r.UnresolvedRefs)
	add(r.Unreachable)
	add(r.Missing)
	for _, c := range r.Children {
		add(c.NotImported)
	}
	return out
}

// A person who acknowledges every record verify lists for an entity gets a clean verify, for
// every entity of the catalog, on a portal with every kind of record that cannot be migrated
// (subtasks of tasks the webhook's user cannot see, task chats it is not in, withheld comments,
// Open Channel chats, a deal's deleted company).
func TestAcknowledgingEveryListedRecordMakesVerifyPass(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 40, Groups: 5, Chats: 12, OpenLines: 2, MessagesPerChat: 8,
		Posts: 30, Tasks: 120, Companies: 20, Contacts: 30, Deals: 60, SmartItems: 10, Workflows: 4, Seed: 41})
	e := v.engine()
	for _, ent := range bitrix.Catalog().Commands() {
		if err := e.Run(v.ctx, ent.Name); err != nil && !errors.Is(err, engine.ErrNotVerified) {
			t.Fatalf("run %s: %v", ent.Name, err)
		}
	}
	for _, ent := range bitrix.Catalog().Commands() {
		t.Run(ent.Name, func(t *testing.T) {
			r, err := e.Verify(v.ctx, ent.Name)
			if err != nil {
				t.Fatal(err)
			}
			if r.Clean() {
				return
			}
			listed := listedRecords(r)
			// Child records waiting for a parent that is not imported are listed with it.
			var waiting, listedWaiting int64
			for _, c := range r.Children {
				waiting += c.ByStatus[string(engine.StatusNew)]
			}
			for _, l := range [][]engine.RecordIssue{r.NotImported, r.Unreachable, r.UnresolvedRefs} {
				for _, i := range l {
					listedWaiting += i.Waiting
				}
			}
			if waiting > 0 && listedWaiting == 0 {
				t.Errorf("%d child records wait, none listed with a parent", waiting)
			}
			t.Logf("first verify: %s; listed %v", r.Summary(), listed)
			if len(listed) == 0 {
				t.Fatalf("verify fails without naming a record: %s", r.Summary())
			}
			for entity, ids := range listed {
				found, err := engine.Machine.Resolve(v.ctx, v.pool, entity, ids)
				if err != nil {
					t.Fatal(err)
				}
				var rows []int64
				for _, id := range ids {
					rows = append(rows, found[id])
				}
				res, err := engine.Machine.Acknowledge(v.ctx, v.pool, rows, "known", "test")
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range res {
					if x.Err != nil {
						t.Errorf("%s: %v", entity, x.Err)
					}
				}
			}
			r, err = e.Verify(v.ctx, ent.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Clean() {
				t.Errorf("verify after acknowledging %v: %s", listed, r.Summary())
			}
		})
	}
}
