package engine_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/importapi"
)

// TestFieldsCreatesMissingCustomFieldsOnce: fields-get reads an entity's custom fields, fields-set
// creates on the target those it lacks, once, and maps each portal option to the target's; set
// then sends the target's option ids. An entity without custom fields says why and succeeds.
func TestFieldsCreatesMissingCustomFieldsOnce(t *testing.T) {
	t.Parallel()
	w := enginetest.New(t, enginetest.Options{Portal: bitrixfake.Options{Users: 5, Seed: 31}})
	e := w.Engine()
	// The target already has one of the portal's two fields (user.userfield.list sample).
	if _, err := w.Client.AddFields(w.Ctx, enginetest.People, []importapi.Field{{Name: "UF_USR_MONEY", Type: "money"}}); err != nil {
		t.Fatal(err)
	}
	got, err := e.FieldsGet(w.Ctx, enginetest.People)
	if err != nil || got.Read != 2 {
		t.Fatalf("fields-get = %+v, %v; want 2 fields read", got, err)
	}
	set, err := e.FieldsSet(w.Ctx, enginetest.People)
	if err != nil || set.Created != 1 || set.Existing != 1 {
		t.Fatalf("fields-set = %+v, %v; want 1 created, 1 existing", set, err)
	}
	fields := w.Target.Fields(enginetest.People)
	if len(fields) != 2 || fields[1].Name != "UF_USR_1724228142162" || fields[1].Type != "enumeration" || !fields[1].Multiple ||
		len(fields[1].Options) != 3 || fields[1].Options[1].Value != "2" || fields[1].Options[1].XMLID != "292df2be1171ed6ab038996deac29ac8" {
		t.Errorf("target fields = %+v", fields)
	}
	// Each portal option (LIST ids 26, 27, 28) is mapped to the option the target created.
	if n := w.Count(`SELECT count(*) FROM bitrix_field_options WHERE entity = $1 AND field_name = 'UF_USR_1724228142162'
AND source_option_id IN ('26', '27', '28') AND target_option_id <> ''`, enginetest.People); n != 3 {
		t.Errorf("%d options mapped, want 3", n)
	}
	// Rerunning both phases creates nothing more.
	if _, err := e.FieldsGet(w.Ctx, enginetest.People); err != nil {
		t.Fatal(err)
	}
	set, err = e.FieldsSet(w.Ctx, enginetest.People)
	if err != nil || set.Created != 0 || len(w.Target.Fields(enginetest.People)) != 2 {
		t.Errorf("second fields-set = %+v, %v, %d fields on the target; want nothing created", set, err, len(w.Target.Fields(enginetest.People)))
	}
	if got := w.Metric(`custom_fields_created_total{entity=people}`); got != 1 {
		t.Errorf("custom_fields_created_total{entity=people} = %v, want 1", got)
	}

	// People carry the portal's option ids; the target receives its own, the field's shape kept.
	w.Phases(e, enginetest.People, "get", "set", "verify")
	want := map[string]string{}
	for _, o := range fields[1].Options {
		want[map[string]string{"1": "26", "2": "27", "3": "28"}[o.Value]] = o.ID
	}
	checked := 0
	for _, rec := range w.Target.Records(enginetest.People) {
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
		if err := json.Unmarshal(w.Record(enginetest.People, p.ID).Payload, &src); err != nil {
			t.Fatal(err)
		}
		if len(src.Enum) != len(p.Enum) {
			t.Fatalf("person %s: %d options on the target, %d on the portal", p.ID, len(p.Enum), len(src.Enum))
		}
		for i, o := range src.Enum {
			if p.Enum[i] != want[strconv.Itoa(o)] {
				t.Errorf("person %s: option %d sent as %q, want the target's %q", p.ID, o, p.Enum[i], want[strconv.Itoa(o)])
			}
			checked++
		}
	}
	if checked == 0 {
		t.Error("no person has an enumeration value; the fake portal should give some")
	}

	// Teams have no custom fields API: both phases say so and succeed.
	for _, phase := range []engine.Phase{engine.PhaseFieldsGet, engine.PhaseFieldsSet} {
		if err := e.Phase(w.Ctx, enginetest.Teams, phase); err != nil {
			t.Errorf("teams %s = %v, want success", phase, err)
		}
	}
	if !strings.Contains(w.Log.String(), enginetest.TeamsEntity().NoFields) {
		t.Error("teams fields phases did not say why they do nothing")
	}
}
