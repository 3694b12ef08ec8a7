package bitrixtest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// cases are the conformance cases, one for every entity that has a command. Portals are as small
// as lets every member of the family have records and a get or set span a few batches: what a
// kill proves does not grow with the data, and make test stays under 5 minutes on 2 CPUs.
var cases = map[string]bitrixtest.Case{
	// 2,600 users: get plans two ID ranges (the rows after the first page, more than one range's
	// 2,450) and walks them and the open one after the last ID at once, so kills land between
	// ranges stored and ranges on their way; each rerun resumes every range where it stopped.
	bitrix.Users:  {Portal: bitrixfake.Options{Users: 2_600, Seed: 54}, GetKills: 4},
	bitrix.Groups: {Portal: bitrixfake.Options{Users: 40, Groups: 16, Seed: 51, Latency: 50 * time.Millisecond}, TargetLatency: 150 * time.Millisecond},
	bitrix.Chats: {Portal: bitrixfake.Options{Users: 40, Groups: 4, Chats: 24, OpenLines: 1, MessagesPerChat: 25, Seed: 55},
		// The Open Channel conversation's guest is no portal user: the chat and its messages
		// cannot be migrated, and verify says so until a person acknowledges it (README).
		Problems: []string{"target holds 25 chats, expected 26", "1 readable chats are not IMPORT_OK",
			"target holds 625 chat messages, 650 were read", "25 chat messages are not IMPORT_OK",
			"1 of 132 chat participants have no target id"}},
	bitrix.Feed:  {Portal: bitrixfake.Options{Users: 30, Groups: 4, Posts: 60, PostComments: 3, Seed: 52}},
	bitrix.Tasks: {Portal: bitrixfake.Options{Users: 30, Groups: 4, Tasks: 120, TaskComments: 3, Seed: 56}},
	// Two smart process types and a handful of funnels (and the 16 groups above): their gets and
	// sets are a few calls, held back (portal and target latency) so that a kill aimed at them
	// lands in them (a set of 2 records once ended before its kill on a loaded machine).
	bitrix.CRMTypes:      {Portal: bitrixfake.Options{Users: 20, SmartItems: 10, Seed: 57, Latency: 50 * time.Millisecond}, TargetLatency: 150 * time.Millisecond},
	bitrix.CRMCategories: {Portal: bitrixfake.Options{Users: 20, Deals: 30, SmartItems: 10, Seed: 58, Latency: 50 * time.Millisecond}, TargetLatency: 150 * time.Millisecond},
	bitrix.Companies:     {Portal: bitrixfake.Options{Users: 20, Companies: 100, Seed: 53}},
	bitrix.Contacts:      {Portal: bitrixfake.Options{Users: 20, Companies: 20, Contacts: 100, Seed: 59}},
	bitrix.Deals:         {Portal: bitrixfake.Options{Users: 20, Companies: 20, Contacts: 20, Deals: 200, Seed: 60}},
	bitrix.DealProducts:  {Portal: bitrixfake.Options{Users: 20, Deals: 120, Seed: 61}},
	bitrix.CRMComments:   {Portal: bitrixfake.Options{Users: 20, Companies: 30, Contacts: 30, Deals: 60, Seed: 62}},
	bitrix.Smart:         {Portal: bitrixfake.Options{Users: 20, Companies: 10, Contacts: 10, Deals: 20, SmartItems: 60, Seed: 63}},
	bitrix.Workflows: {Portal: bitrixfake.Options{Users: 20, Companies: 10, Contacts: 10, Deals: 30, SmartItems: 10, Workflows: 10,
		Seed: 64}},
}

// Every entity that has a command passes the conformance test; one without a case fails, so that
// the next entity cannot be added without one (and a case of no command, so none is left behind).
func TestEveryEntityConforms(t *testing.T) {
	reg := bitrix.Catalog()
	commands := reg.Commands()
	for name := range cases {
		if !slices.ContainsFunc(commands, func(e *engine.Entity) bool { return e.Name == name }) {
			t.Errorf("conformance case %q names no bitrix command", name)
		}
	}
	h := bitrixtest.New(t, bitrixtest.CatalogChild)
	for _, ent := range commands {
		t.Run(ent.Name, func(t *testing.T) {
			c, ok := cases[ent.Name]
			if !ok {
				t.Fatalf("bitrix entity %q has no conformance case: add one to cases", ent.Name)
			}
			t.Parallel()
			c.Registry, c.Entity = reg, ent.Name
			h.Conformance(t, c)
		})
	}
}
