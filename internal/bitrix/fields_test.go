package bitrix_test

import (
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/importapi"
)

func TestFieldsCreatesMissingCustomFieldsOnce(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 5, Seed: 31})
	e := v.engine()
	// The target already has one of the portal's two fields (user.userfield.list sample).
	if _, err := v.client.AddFields(v.ctx, bitrix.Users, []importapi.Field{{Name: "UF_USR_MONEY", Type: "money"}}); err != nil {
		t.Fatal(err)
	}
	got, err := e.FieldsGet(v.ctx, bitrix.Users)
	if err != nil || got.Read != 2 {
		t.Fatalf("fields-get = %+v, %v; want 2 fields read", got, err)
	}
	set, err := e.FieldsSet(v.ctx, bitrix.Users)
	if err != nil || set.Created != 1 || set.Existing != 1 {
		t.Fatalf("fields-set = %+v, %v; want 1 created, 1 existing", set, err)
	}
	fields := v.target.Fields(bitrix.Users)
	if len(fields) != 2 || fields[1].Name != "UF_USR_1724228142162" || fields[1].Type != "enumeration" || !fields[1].Multiple ||
		!strings.Contains(string(fields[1].Options), `"value":"2"`) || !strings.Contains(string(fields[1].Options), `"xml_id":"292df2be1171ed6ab038996deac29ac8"`) {
		t.Errorf("target fields = %+v", fields)
	}
	// Rerunning both phases creates nothing more.
	if _, err := e.FieldsGet(v.ctx, bitrix.Users); err != nil {
		t.Fatal(err)
	}
	set, err = e.FieldsSet(v.ctx, bitrix.Users)
	if err != nil || set.Created != 0 || len(v.target.Fields(bitrix.Users)) != 2 {
		t.Errorf("second fields-set = %+v, %v, %d fields on the target; want nothing created", set, err, len(v.target.Fields(bitrix.Users)))
	}
	if got := v.metric(`custom_fields_created_total{entity=users}`); got != 1 {
		t.Errorf("custom_fields_created_total{entity=users} = %v, want 1", got)
	}

	// Workgroups have no custom fields API: both phases say so and succeed.
	for _, phase := range []string{"fields-get", "fields-set"} {
		if err := e.Phase(v.ctx, bitrix.Groups, phase); err != nil {
			t.Errorf("groups %s = %v, want success", phase, err)
		}
	}
	if !strings.Contains(v.log.String(), "workgroups have no custom fields in the Bitrix24 REST API") {
		t.Error("groups fields phases did not say why they do nothing")
	}
}
