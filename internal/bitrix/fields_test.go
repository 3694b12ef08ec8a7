package bitrix_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
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
		len(fields[1].Options) != 3 || fields[1].Options[1].Value != "2" || fields[1].Options[1].XMLID != "292df2be1171ed6ab038996deac29ac8" {
		t.Errorf("target fields = %+v", fields)
	}
	// Each portal option (LIST ids 26, 27, 28) is mapped to the option the target created.
	if n := v.count(`SELECT count(*) FROM bitrix_field_options WHERE entity = 'users' AND field_name = 'UF_USR_1724228142162'
AND source_option_id IN ('26', '27', '28') AND target_option_id <> ''`); n != 3 {
		t.Errorf("%d options mapped, want 3", n)
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

	// Users carry the portal's option ids; the target receives its own, the field's shape kept.
	v.phases(e, bitrix.Users, "get", "set", "verify")
	want := map[string]string{}
	for _, o := range fields[1].Options {
		want[map[string]string{"1": "26", "2": "27", "3": "28"}[o.Value]] = o.ID
	}
	checked := 0
	for _, rec := range v.target.Records(bitrix.Users) {
		var p struct {
			ID   string   `json:"ID"`
			Enum []string `json:"UF_USR_1724228142162"`
		}
		if err := json.Unmarshal(rec.Payload, &p); err != nil {
			t.Fatal(err)
		}
		var src struct {
			Enum []int `json:"UF_USR_1724228142162"`
		}
		if err := json.Unmarshal(v.record(bitrix.Users, p.ID).Payload, &src); err != nil {
			t.Fatal(err)
		}
		if len(src.Enum) != len(p.Enum) {
			t.Fatalf("user %s: %d options on the target, %d on the portal", p.ID, len(p.Enum), len(src.Enum))
		}
		for i, o := range src.Enum {
			if p.Enum[i] != want[strconv.Itoa(o)] {
				t.Errorf("user %s: option %d sent as %q, want the target's %q", p.ID, o, p.Enum[i], want[strconv.Itoa(o)])
			}
			checked++
		}
	}
	if checked == 0 {
		t.Error("no user has an enumeration value; the fake portal should give some")
	}

	// Workgroups have no custom fields API: both phases say so and succeed.
	for _, phase := range []engine.Phase{engine.PhaseFieldsGet, engine.PhaseFieldsSet} {
		if err := e.Phase(v.ctx, bitrix.Groups, phase); err != nil {
			t.Errorf("groups %s = %v, want success", phase, err)
		}
	}
	if !strings.Contains(v.log.String(), "workgroups have no custom fields in the Bitrix24 REST API") {
		t.Error("groups fields phases did not say why they do nothing")
	}
}
