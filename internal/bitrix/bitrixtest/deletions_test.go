package bitrixtest_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestKilledDeletionsConverge migrates the feed and the tasks, deletes posts and tasks on the
// portal, and migrates them again under BITRIX_DELETIONS=propagate, killing the get that
// concludes the deletions and the set that removes them from the target: the killed runs must end
// where the uninterrupted one did (the same records in DELETED_ON_TARGET, nothing of theirs left
// on the target, nothing else removed). The feed is offset-paged (a post missed by a shifted page
// is asked for by id before it is concluded deleted); the tasks are an ID scan with children.
func TestKilledDeletionsConverge(t *testing.T) {
	h := bitrixtest.New(t)
	for _, c := range []struct {
		entity, portalEntity string
		at                   []int
		opts                 bitrixfake.Options
	}{
		{bitrix.Feed, bitrixfake.DeleteFeed, []int{3, 10, 21}, bitrixfake.Options{Users: 30, Groups: 4, Posts: 60, PostComments: 3, Seed: 52}},
		{bitrix.Tasks, bitrixfake.DeleteTasks, []int{2, 7, 15, 40}, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 120, TaskComments: 3, Seed: 56}},
	} {
		t.Run(c.entity, func(t *testing.T) {
			t.Parallel()
			h.Conformance(t, bitrixtest.Case{Entity: c.entity, Portal: c.opts, Env: []string{"BITRIX_DELETIONS=propagate"},
				Change: func(p *bitrixfake.Portal) {
					ids := p.PortalIDs(c.portalEntity)
					for _, i := range c.at {
						if err := p.Delete(c.portalEntity, ids[i]); err != nil {
							t.Fatal(err)
						}
					}
				},
				Check: func(t *testing.T, query func(q string, args ...any) []string) {
					rows := query(`SELECT entity || ' ' || count(*) FROM bitrix_records WHERE status = 'DELETED_ON_TARGET'
GROUP BY entity ORDER BY 1`)
					t.Logf("removed from the target: %v", rows)
					if len(rows) < 2 {
						t.Errorf("records in DELETED_ON_TARGET by entity: %v; want %s and its children", rows, c.entity)
					}
				}})
		})
	}
}
