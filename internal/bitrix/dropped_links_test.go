package bitrix_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// A task in a workgroup the groups' complete get never read (a secret project, hidden from the
// webhook's user) keeps the task and drops the link: imported with groupId null, listed by verify.
func TestTaskOfAnUnseenGroupIsImportedWithoutTheLink(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 30, Groups: 4, Tasks: 40, Seed: 45})
	e := v.engine()
	v.migrateBase(e)
	v.phases(e, bitrix.Tasks, "fields-get", "fields-set", "get")
	var group string
	if err := v.pool.QueryRow(v.ctx, `SELECT payload->>'groupId' FROM bitrix_records WHERE entity = 'tasks'
AND coalesce(payload->>'groupId', '0') <> '0' ORDER BY id LIMIT 1`).Scan(&group); err != nil {
		t.Fatalf("no task in a group: %v", err)
	}
	oldTarget := v.targetID(bitrix.Groups, group)
	// As if the groups' get had never seen it.
	for _, sql := range []string{`DELETE FROM bitrix_records WHERE entity = 'group_members' AND parent_source_id = $1`,
		`DELETE FROM bitrix_records WHERE entity = 'groups' AND source_id = $1`,
		`DELETE FROM bitrix_id_map WHERE entity = 'groups' AND source_id = $1`} {
		if _, err := v.pool.Exec(v.ctx, sql, group); err != nil {
			t.Fatal(err)
		}
	}
	v.phases(e, bitrix.Tasks, "set")
	in := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'tasks' AND payload->>'groupId' = $1`, group)
	ok := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'tasks' AND payload->>'groupId' = $1 AND status = 'IMPORT_OK'`, group)
	if in == 0 || ok != in {
		t.Fatalf("%d of the %d tasks of group %s imported", ok, in, group)
	}
	for _, r := range v.target.Records(bitrix.Tasks) {
		if p := payloadOf(t, r.Payload); p["groupId"] == oldTarget {
			t.Errorf("%s names the unseen group", r.Key)
		}
	}
	rep, err := e.Verify(v.ctx, bitrix.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, d := range rep.DroppedLinks {
		if d.Entity == bitrix.Tasks {
			dropped++
		}
	}
	if dropped < in {
		t.Errorf("verify lists %d dropped task links, want %d: %s", dropped, in, rep.Summary())
	}
}
