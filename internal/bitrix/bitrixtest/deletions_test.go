package bitrixtest_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestKilledDeletionsConverge migrates the feed, the tasks and the deals, deletes posts, tasks and
// deals on the portal, and migrates them again under BITRIX_DELETIONS=propagate, killing the get
// that concludes the deletions and the set that removes them from the target: the killed runs
// must end where the uninterrupted one did (the same records in DELETED_ON_TARGET, nothing of
// theirs left on the target, nothing else removed, none removed twice). The feed is offset-paged
// (a post missed by a shifted page is asked for by id before it is concluded deleted); the tasks
// are an ID scan with children; the deals an ID scan with a list operator for ids (@id), whose
// deletion also takes the links other records hold to them. The last case kills gets inside
// their asks by id of the records their pass did not see (confirmationCase).
func TestKilledDeletionsConverge(t *testing.T) {
	h := bitrixtest.New(t, bitrixtest.CatalogChild)
	t.Run("deals confirmed by id", func(t *testing.T) {
		t.Parallel()
		h.Conformance(t, confirmationCase(t))
	})
	for _, c := range []struct {
		entity, portalEntity string
		at                   []int
		opts                 bitrixfake.Options
		// children: the entity has children, which must follow it to DELETED_ON_TARGET.
		children bool
	}{
		{bitrix.Feed, bitrixfake.DeleteFeed, []int{3, 10, 21}, bitrixfake.Options{Users: 30, Groups: 4, Posts: 60, PostComments: 3, Seed: 52},
			true},
		{bitrix.Tasks, bitrixfake.DeleteTasks, []int{2, 7, 15, 40}, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 120, TaskComments: 3, Seed: 56},
			true},
		// Deals: the confirmation case above (deleted deals propagated under get and set kills).
	} {
		t.Run(c.entity, func(t *testing.T) {
			t.Parallel()
			var deleted []string
			h.Conformance(t, bitrixtest.Case{Registry: bitrix.Catalog(), Entity: c.entity, Portal: c.opts, Env: []string{"BITRIX_DELETIONS=propagate"},
				TargetMethodLatency: deleteHeld(c.entity),
				Change: func(p *bitrixfake.Portal) {
					ids := p.PortalIDs(c.portalEntity)
					for _, i := range c.at {
						if err := p.Delete(c.portalEntity, ids[i]); err != nil {
							t.Fatal(err)
						}
						deleted = append(deleted, strconv.Itoa(ids[i]))
					}
				},
				Check: func(t *testing.T, query func(q string, args ...any) []string) {
					rows := query(`SELECT entity || ' ' || count(*) FROM bitrix_records WHERE status = 'DELETED_ON_TARGET'
GROUP BY entity ORDER BY 1`)
					t.Logf("removed from the target: %v", rows)
					if c.children && len(rows) < 2 {
						t.Errorf("records in DELETED_ON_TARGET by entity: %v; want %s and its children", rows, c.entity)
					}
					requireDeleted(t, query, c.entity, deleted)
				}})
		})
	}
}

// requireDeleted requires the records of the entity deleted on the portal that the migration had
// read (a post the webhook's user never saw is not) to be removed from the target
// (DELETED_ON_TARGET), and no other record of it to be in a deleted status.
func requireDeleted(t *testing.T, query func(q string, args ...any) []string, entity string, deleted []string) {
	t.Helper()
	want := query(`SELECT source_id || ' DELETED_ON_TARGET' FROM bitrix_records WHERE entity = $1 AND source_id = ANY($2)
ORDER BY source_id`, entity, deleted)
	got := query(`SELECT source_id || ' ' || status FROM bitrix_records WHERE entity = $1
AND status IN ('DELETED_AT_SOURCE', 'DELETED_ON_TARGET') ORDER BY source_id`, entity)
	if len(want) == 0 {
		t.Fatalf("none of the %s deleted on the portal (%v) was migrated: the case proves nothing", entity, deleted)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s in a deleted status: %v; want exactly those deleted on the portal: %v", entity, got, want)
	}
}

// confirmationCase deletes 3 of 120 deals on the portal and has it answer a page of
// the deals' ID range empty in every pass, so that each pass misses the 70 deals after it besides
// the deleted ones: more than 10%, so a sample of 50 is asked for by id, then every unseen deal.
// Kills land inside those asks (ConfirmKills): a get killed there concludes nothing, and the next
// pass, which reads the missed deals again, concludes it. Then get and set are killed at random as
// in every case: the killed runs must end as the uninterrupted one did, the 3 deals removed from
// the target once, no deal the portal still has marked deleted.
func confirmationCase(t *testing.T) bitrixtest.Case {
	var emptyAfter int
	var deleted []string
	return bitrixtest.Case{Registry: bitrix.Catalog(), Entity: bitrix.Deals, Env: []string{"BITRIX_DELETIONS=propagate"},
		Portal:              bitrixfake.Options{Users: 20, Companies: 10, Contacts: 10, Deals: 120, Seed: 66},
		ConfirmKills:        4,
		TargetMethodLatency: deleteHeld(bitrix.Deals),
		Change: func(p *bitrixfake.Portal) {
			ids := p.PortalIDs(bitrixfake.DeleteDeals)
			for _, i := range []int{3, 60, 100} {
				if err := p.Delete(bitrixfake.DeleteDeals, ids[i]); err != nil {
					t.Fatal(err)
				}
				deleted = append(deleted, strconv.Itoa(ids[i]))
			}
			emptyAfter = p.PortalIDs(bitrixfake.DeleteDeals)[49] // the last of the first page
		},
		EachRun: func(p *bitrixfake.Portal) { p.EmptyPageAfter("crm.item.list", emptyAfter) },
		Check: func(t *testing.T, query func(q string, args ...any) []string) {
			requireDeleted(t, query, bitrix.Deals, deleted)
		}}
}

// deleteHeld holds the target's delete of the entity back 100 ms: where the set after the deletions
// is that one call (the deals have no children to delete), a kill aimed at it lands in it, while
// the delete is applied and its answer not yet given, so that the rerun deletes again.
func deleteHeld(entity string) map[string]time.Duration {
	return map[string]time.Duration{"import." + entity + ".delete": 100 * time.Millisecond}
}
