package social

import (
	"reflect"
	"testing"

	"github.com/ingest-dev/ingest/internal/pgtext"
)

// The log names the item around each cleaned string: the innermost object with an id.
func TestItemIDs(t *testing.T) {
	body := []byte(`{"id":"acct","biography":"b","business_discovery":{"media":{"data":[{"id":"m1","caption":"x"},
{"id":"m2","comments":{"data":[{"id":"c1","text":"t"}]}}]}},"odd key":[{"id":"k1","a b":{"v":"w"}}]}`)
	changes := []pgtext.Change{{Path: "$.biography"}, {Path: "$.business_discovery.media.data[0].caption"},
		{Path: "$.business_discovery.media.data[1].comments.data[0].text"}, {Path: "$.business_discovery.media.data[0].caption"},
		{Path: `$["odd key"][0]["a b"].v`}, {Path: "$.missing[3].x"}}
	want := []string{"acct", "m1", "c1", "k1"}
	if got := itemIDs(body, changes); !reflect.DeepEqual(got, want) {
		t.Errorf("itemIDs = %v, want %v", got, want)
	}
}
