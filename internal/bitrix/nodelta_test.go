package bitrix_test

import (
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// TestFullPassEntitiesSayWhy: the entities whose methods cannot be read by modification time
// (docs/bitrix-delta.md) say why in their own words, which the log and `bitrix status` show.
func TestFullPassEntitiesSayWhy(t *testing.T) {
	t.Parallel()
	reg := bitrix.Catalog()
	for name, mentions := range map[string]string{
		bitrix.Users:             "TIMESTAMP_X",
		bitrix.Groups:            "membership",
		bitrix.Chats:             "participant",
		bitrix.Feed:              "LOG_DATE_FROM",
		bitrix.CRMTypes:          "updatedTime",
		bitrix.CRMCategories:     "crm.status.list",
		bitrix.Workflows:         "MODIFIED",
		bitrix.WorkflowInstances: "MODIFIED",
		bitrix.WorkflowTasks:     "MODIFIED",
	} {
		ent, ok := reg.Entity(name)
		if !ok {
			t.Fatalf("no entity %s", name)
		}
		if _, ok := ent.Lister.(engine.FullPassLister); !ok {
			t.Errorf("%s: the lister does not say whether it can read by modification time", name)
			continue
		}
		if why := engine.NoDeltaOf(ent.Lister); !strings.Contains(why, mentions) {
			t.Errorf("%s: NoDelta = %q, want the reason (naming %s)", name, why, mentions)
		}
	}
}
