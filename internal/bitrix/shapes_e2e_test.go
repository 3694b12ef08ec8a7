package bitrix_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// recordedShapes are the answer shapes recorded from real portals that once stopped a get
// (issue 31): result_error as an unkeyed list, a total that is the page's size, answers keyed by
// the commands' positions 0, 1, 2... with failed commands left out of result, and the 2025 time
// block.
var recordedShapes = bitrixfake.Shapes{UnkeyedErrors: true, PageTotal: true, PositionKeys: true, TimeGeneration: 3}

// failSome makes some commands of each method fail inside batches, so that batches carry errors
// the portal does not key by command.
func failSome(p *bitrixfake.Portal, methods ...string) {
	for _, m := range methods {
		p.FailCommands(m, "INTERNAL_SERVER_ERROR", 2)
		p.FailCommands(m, "QUERY_LIMIT_EXCEEDED", 1)
	}
}

// TestGetThroughRecordedShapesStoresEveryRecord: every entity's get through a portal answering
// in the recorded shapes stores what a get through a documented-shape portal stores, and
// succeeds (the command exits 0).
func TestGetThroughRecordedShapesStoresEveryRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     bitrixfake.Options
		entities []string // got in this order; the first ones are what the last needs
		methods  []string // failed now and then inside batches
	}{
		{"users", bitrixfake.Options{Users: 173, Seed: 31}, []string{bitrix.Users}, []string{"user.get"}},
		{"chats", bitrixfake.Options{Users: 40, Groups: 10, Chats: 60, MessagesPerChat: 30, Seed: 32},
			[]string{bitrix.Users, bitrix.Groups, bitrix.Chats},
			[]string{"im.dialog.get", "im.chat.get", "im.chat.user.list", "im.dialog.messages.get", "im.recent.list"}},
		{"workflows", bitrixfake.Options{Users: 60, Seed: 33, Companies: 20, Contacts: 30, Deals: 60, SmartItems: 10, Workflows: 80},
			[]string{bitrix.Workflows},
			[]string{"bizproc.workflow.template.list", "bizproc.workflow.instances", "bizproc.task.list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := storedAfterGet(t, tt.opts, tt.entities, nil)
			shaped := tt.opts
			shaped.Shapes = recordedShapes
			got := storedAfterGet(t, shaped, tt.entities, tt.methods)
			for entity, n := range want {
				if n == 0 {
					t.Errorf("%s: the reference get stored nothing", entity)
				}
				if got[entity] != n {
					t.Errorf("%s: %d records stored through the recorded shapes, %d through the documented ones", entity, got[entity], n)
				}
			}
		})
	}
}

// storedAfterGet runs the entities' gets against a new portal and returns the records stored
// per entity, by status and reason, so that records kept as out of reach count apart.
func storedAfterGet(t *testing.T, opts bitrixfake.Options, entities, failing []string) map[string]int {
	t.Helper()
	v := newEnv(t, opts)
	e := v.engine()
	for _, entity := range entities {
		failSome(v.portal, failing...)
		if _, err := e.Get(v.ctx, entity); err != nil {
			t.Fatalf("get %s (shapes %+v): %v", entity, opts.Shapes, err)
		}
	}
	out := map[string]int{}
	rows, err := v.pool.Query(v.ctx, `SELECT entity || ' ' || status || ' ' || coalesce(split_part(last_error, ':', 1), ''), count(*)
FROM bitrix_records GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if opts.Shapes != (bitrixfake.Shapes{}) && v.portal.Stats().Faults == 0 && len(failing) > 0 {
		t.Errorf("no command failed inside a batch: the test tried nothing")
	}
	return out
}

// TestRunThroughRecordedShapesVerifies: get, set and verify of users through the recorded
// shapes; the total that is the page's size is neither the end of the listing nor a count verify
// holds the records against.
func TestRunThroughRecordedShapesVerifies(t *testing.T) {
	t.Parallel()
	const users = 173
	v := newEnv(t, bitrixfake.Options{Users: users, Seed: 34, Shapes: recordedShapes})
	e := v.engine()
	failSome(v.portal, "user.get")
	v.migrateUsers(e)
	if got := v.target.Count(bitrix.Users); got != users {
		t.Errorf("the target holds %d users, want %d", got, users)
	}
	r, err := e.Verify(v.ctx, bitrix.Users)
	if err != nil || !r.Clean() {
		t.Errorf("verify: %v, %+v", err, r)
	}
}
