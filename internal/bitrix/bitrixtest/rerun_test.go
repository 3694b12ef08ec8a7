package bitrixtest_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// A rerun after the portal changed, killed anywhere (at the portal's method runs, at the target's
// writes) and rerun, ends where an uninterrupted one ends (issue 35). The portal is the demo's
// mix at a tenth; at that size a churn of 5% is what makes every kind of change (edits,
// additions, comments added and deleted, deletions), under propagate so that kills land in the
// deletions' removal from the target too.
func TestRerunAfterChurnSurvivesKills(t *testing.T) {
	t.Parallel()
	h := bitrixtest.New(t, bitrixtest.CatalogChild)
	h.Rerun(t, bitrixtest.RerunCase{
		Registry: bitrix.Catalog(),
		Portal: bitrixfake.Options{Seed: 35, Users: 50, Groups: 4, Chats: 6, MessagesPerChat: 6, Posts: 12, PostComments: 3,
			Tasks: 30, TaskComments: 4, Companies: 30, Contacts: 50, Deals: 100, SmartItems: 20, Workflows: 4},
		Change: func(t *testing.T, p *bitrixfake.Portal) {
			rep := p.Churn(35, 0.05)
			t.Logf("churn:\n%s", rep)
		},
		Env: []string{"BITRIX_DELETIONS=propagate"},
	})
}
