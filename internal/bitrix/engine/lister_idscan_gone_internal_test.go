package engine

import (
	"reflect"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A method that documents a list operator is asked for 50 ids a command; one that documents
// none (tasks.task.list, sonet_group.get) one id a command by plain equality, never with an
// operator it may not know (it could ignore the filter, or refuse the call).
func TestAskByIDsUsesTheMethodsDocumentedFilter(t *testing.T) {
	ids := make([]string, 120)
	for i := range ids {
		ids[i] = string(rune('a' + i%26))
	}
	users := &IDScan{Scan: rest.UsersScan(map[string]any{"ADMIN_MODE": true})}
	asks, err := users.askByIDs(ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(asks) != 3 || len(asks[0].ids) != 50 || len(asks[2].ids) != 20 {
		t.Fatalf("users: %d asks, want 3 of 50, 50 and 20 ids", len(asks))
	}
	params := func(a presenceAsk) map[string]any { return a.cmd.Params.(map[string]any) }
	filter := params(asks[2])["FILTER"].(map[string]any)
	if got := filter["@ID"]; !reflect.DeepEqual(got, ids[100:]) {
		t.Errorf("users filter @ID = %v, want the last 20 ids", got)
	}
	if params(asks[0])["start"] != -1 || params(asks[0])["ADMIN_MODE"] != true {
		t.Errorf("users params = %v, want the scan's own and start -1", params(asks[0]))
	}

	tasks := &IDScan{Scan: rest.Scan{Method: "tasks.task.list", FilterParam: "filter", IDField: "id", FilterField: "ID",
		Params: map[string]any{"filter": map[string]any{"!STATUS": 1}}}}
	asks, err = tasks.askByIDs(ids[:3], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(asks) != 3 {
		t.Fatalf("tasks: %d asks, want one a record", len(asks))
	}
	want := map[string]any{"ID": ids[1], "!STATUS": 1}
	if got := params(asks[1])["filter"]; !reflect.DeepEqual(got, want) {
		t.Errorf("tasks filter = %v, want %v", got, want)
	}
}
