package engine_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// clients are CRM contacts (crm.item.list of type 3), a synthetic entity whose custom fields
// (crm.contact.userfield.list) include an employee field: its values are people's portal ids,
// which set sends as their target ids (CustomFields.Links).
const clients = "clients"

// employeeField is the contacts' employee custom field, in the portal's samples.
const employeeField = "UF_CRM_1724412805"

func clientsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     clients,
		Help:     "CRM contacts with an employee custom field",
		Requires: []string{enginetest.People},
		Lister: &engine.IDScan{Scan: rest.Scan{Method: "crm.item.list",
			Params:  map[string]any{"entityTypeId": 3, "select": []string{"*", "UF_*"}, "useOriginalUfNames": "Y"},
			IDField: "id", RowsPath: []string{"items"}, Order: map[string]any{"order": map[string]any{"id": "ASC"}}, IDListOp: "@"},
			CountParams: map[string]any{"select": []string{"id"}}},
		IDField: "id",
		Dates:   []string{"createdTime", "updatedTime", "birthdate"},
		Batch:   50,
		Fields: &engine.CustomFields{Method: "crm.contact.userfield.list",
			Params: map[string]any{"order": map[string]any{"ID": "ASC"}, "filter": map[string]any{"LANG": "ru"}},
			Naming: &engine.FieldNaming{Prefix: "UF_CRM_", Max: 50}, Links: &engine.FieldLinks{Employee: enginetest.People}},
	}
}

// TestEmployeeFieldsAreSentAsTargetIDs: set translates an employee custom field's values, people's
// portal ids, into their target ids, as any reference; a client whose employee has no target id
// (a person the portal no longer lists) fails with the field named, and is never sent half-mapped.
func TestEmployeeFieldsAreSentAsTargetIDs(t *testing.T) {
	t.Parallel()
	reg, err := engine.NewRegistry(append(enginetest.Entities(), clientsEntity())...)
	if err != nil {
		t.Fatal(err)
	}
	w := enginetest.New(t, enginetest.Options{Registry: reg, Portal: bitrixfake.Options{Users: 30, Companies: 5, Contacts: 60, Seed: 71}})
	// A person who left the portal before the people were read, named by some clients' field.
	gone := w.Portal.UserIDs()[3]
	w.Portal.DeleteUser(gone)
	e := w.Engine()
	w.Migrate(e, enginetest.People)
	w.Phases(e, clients, "fields-get", "fields-set", "get", "set")

	// employee reads the employee field's values, ids sent as numbers or strings.
	employee := func(payload json.RawMessage) []string {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(payload, &f); err != nil {
			t.Fatal(err)
		}
		var ids []rest.ID
		if err := json.Unmarshal(f[employeeField], &ids); err != nil && f[employeeField] != nil {
			t.Fatalf("%s: %v", f[employeeField], err)
		}
		var out []string
		for _, id := range ids {
			out = append(out, id.String())
		}
		return out
	}
	orphans, sent := 0, 0
	for _, id := range w.Portal.PortalIDs(bitrixfake.DeleteContacts) {
		r := w.Record(clients, strconv.Itoa(id))
		names := employee(r.Payload)
		if len(names) == 0 {
			continue
		}
		if names[0] == strconv.Itoa(gone) {
			orphans++
			if r.Status != engine.ImportErr || !strings.Contains(r.LastError, employeeField) {
				t.Errorf("client %d names the person %d the portal no longer lists: %s %q, want IMPORT_ERR naming %s",
					id, gone, r.Status, r.LastError, employeeField)
			}
			if _, held := w.Target.Lookup(clients, "source:clients:"+strconv.Itoa(id)); held {
				t.Errorf("client %d sent with an employee that has no target id", id)
			}
			continue
		}
		rec, held := w.Target.Lookup(clients, "source:clients:"+strconv.Itoa(id))
		if r.Status != engine.ImportOK || !held {
			t.Errorf("client %d: %s %q, on the target %v", id, r.Status, r.LastError, held)
			continue
		}
		if got, want := employee(rec.Payload), w.TargetID(enginetest.People, names[0]); len(got) != 1 || got[0] != want {
			t.Errorf("client %d: %s on the target %v, want person %s's target id %s", id, employeeField, got, names[0], want)
		}
		sent++
	}
	if orphans == 0 || sent == 0 {
		t.Fatalf("%d clients name the person gone, %d another: the test needs both", orphans, sent)
	}
}
