package bitrix_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestKilledDeletionsConverge migrates the feed and the tasks, deletes posts and tasks on the
// portal, and migrates again under BITRIX_DELETIONS=propagate, killing the get that concludes the
// deletions and the set that removes them from the target; the killed runs must end where the
// uninterrupted one did: the same records in DELETED_ON_TARGET, nothing of theirs left on the
// target, nothing else removed.
func TestKilledDeletionsConverge(t *testing.T) {
	opts := bitrixfake.Options{Users: 50, Groups: 6, Posts: 60, PostComments: 3, Tasks: 120, TaskComments: 3, Seed: 55}
	deleteSome := func(p *bitrixfake.Portal) {
		for entity, at := range map[string][]int{bitrixfake.DeleteFeed: {3, 10, 21}, bitrixfake.DeleteTasks: {2, 7, 15, 40}} {
			ids := p.PortalIDs(entity)
			for _, i := range at {
				if err := p.Delete(entity, ids[i]); err != nil {
					t.Error(err)
				}
			}
		}
	}
	removed := func(t *testing.T, w *world) {
		rows := dumpRows(t, w.dbURL, `SELECT entity || ' ' || count(*) FROM bitrix_records WHERE status = 'DELETED_ON_TARGET'
GROUP BY entity ORDER BY 1`)
		t.Logf("removed from the target: %v", rows)
		if len(rows) < 3 {
			t.Errorf("records in DELETED_ON_TARGET by entity: %v; want posts and tasks, with their children", rows)
		}
	}
	crashTestWith(t, crashSetup{env: []string{"BITRIX_DELETIONS=propagate"}, change: deleteSome, check: removed},
		opts, []string{bitrix.Users, bitrix.Groups, bitrix.Feed, bitrix.Tasks},
		[]aim{{"feed get", 2}, {"feed set", 2}, {"tasks get", 2}, {"tasks set", 2}},
		bitrix.FeedComments, bitrix.TaskComments)
}
