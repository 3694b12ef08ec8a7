package bitrix_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// After a complete full pass, the CRM entities, the smart processes and the tasks are read by
// their documented modification filters: the second get is a delta pass that stores what changed
// and nothing else, and concludes no deletion from the records it did not read.
func TestSecondGetOfCRMAndTasksIsDelta(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entity string
		before []string
		// edit is the fake's name of the entity's records, "" to change nothing.
		edit string
		// scopes are the inventories that run delta passes; requests, when set, what the
		// second get may send.
		scopes   []string
		requests int
	}{
		{entity: bitrix.Deals, before: []string{bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts},
			scopes: []string{bitrix.Deals}, requests: 4}, // the bounds, >updatedTime, >lastActivityTime, the ID-range counts
		{entity: bitrix.Deals, before: []string{bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts},
			// an edit: read by the filters, the counts agree
			edit: bitrixfake.DeleteDeals, scopes: []string{bitrix.Deals}, requests: 4},
		{entity: bitrix.Contacts, before: []string{bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies},
			edit: bitrixfake.DeleteContacts, scopes: []string{bitrix.Contacts}},
		{entity: bitrix.Smart, before: []string{bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts, bitrix.Deals},
			scopes: []string{"smart_1038", "smart_1042"}},
		{entity: bitrix.Tasks, before: []string{bitrix.Groups}, edit: bitrixfake.DeleteTasks, scopes: []string{bitrix.Tasks}},
	}
	for _, tt := range tests {
		t.Run(tt.entity+" "+tt.edit, func(t *testing.T) {
			t.Parallel()
			opts := crmOptions(61)
			opts.Tasks = 70
			v := newEnv(t, opts)
			e := v.engine()
			for _, ent := range append([]string{bitrix.Users}, tt.before...) {
				v.phases(e, ent, "get")
			}
			v.phases(e, tt.entity, "get")
			stored := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, tt.entity)
			changed := 0
			if tt.edit != "" {
				ids := v.portal.PortalIDs(tt.edit)
				if err := v.portal.Edit(tt.edit, ids[len(ids)/2]); err != nil {
					t.Fatal(err)
				}
				changed = 1
			}
			before := v.portal.Stats().Requests
			st, err := v.engine().Get(v.ctx, tt.entity)
			if err != nil {
				t.Fatal(err)
			}
			if tt.requests > 0 {
				if got := v.portal.Stats().Requests - before; got != tt.requests {
					t.Errorf("the second get sent %d requests, want %d", got, tt.requests)
				}
			}
			for _, scope := range tt.scopes {
				inv := v.inventoryRow(scope)
				if inv.Kind != engine.PassDelta || !inv.Complete {
					t.Errorf("%s: pass %s complete=%v (%s), want a complete delta pass", scope, inv.Kind, inv.Complete, deref(inv.Reason))
				}
			}
			if inv := v.inventory(tt.entity); inv.Kind != engine.PassDelta || !strings.Contains(deref(inv.Reason), "changed") {
				t.Errorf("%s: pass %s (%s), want delta", tt.entity, inv.Kind, deref(inv.Reason))
			}
			c := st.Of(tt.entity)
			if c.Inserted != 0 || c.Changed != changed || c.Rows != changed {
				t.Errorf("the delta pass read %d (%d new, %d changed), want the %d edited", c.Rows, c.Inserted, c.Changed, changed)
			}
			if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, tt.entity); n != stored {
				t.Errorf("%d records after the delta pass, %d before", n, stored)
			}
			if n := v.count(`SELECT count(*) FROM bitrix_records WHERE status = 'DELETED_AT_SOURCE'`); n != 0 {
				t.Errorf("%d records concluded deleted by a delta pass", n)
			}
		})
	}
}

// inventoryRow returns an inventory row by its scope (an entity's, or one scan's of it).
func (v *env) inventoryRow(scope string) engine.Inventory {
	v.t.Helper()
	inv, err := engine.NewStore(v.pool).Inventory(v.ctx, scope)
	if err != nil {
		v.t.Fatal(err)
	}
	return inv
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestDeltaFindsADeletedContactReadingOnePage: a contact deleted on the portal makes its range's
// count fall; the delta counts that range again a page at a time and lists again only the page
// that holds it, so only that page's contacts have their companies read (one command each,
// crm.contact.company.items.get), not the range's; the contact is concluded deleted.
func TestDeltaFindsADeletedContactReadingOnePage(t *testing.T) {
	t.Parallel()
	opts := crmOptions(62)
	opts.Contacts = 400
	v := newEnv(t, opts)
	e := v.engine()
	for _, ent := range []string{bitrix.Users, bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts} {
		v.phases(e, ent, "get")
	}
	ids := v.portal.PortalIDs(bitrixfake.DeleteContacts)
	gone := ids[len(ids)/2]
	if err := v.portal.Delete(bitrixfake.DeleteContacts, gone); err != nil {
		t.Fatal(err)
	}
	const links = "crm.contact.company.items.get"
	before := v.portal.Stats().Calls[links]
	if _, err := v.engine().Get(v.ctx, bitrix.Contacts); err != nil {
		t.Fatal(err)
	}
	if got := v.portal.Stats().Calls[links] - before; got == 0 || got > 50 {
		t.Errorf("the delta read the companies of %d contacts, want those of the one page listed again (1 to 50)", got)
	}
	if st := v.pick(`SELECT status FROM bitrix_records WHERE entity = 'contacts' AND source_id = $1`, strconv.Itoa(gone)); st != string(engine.DeletedAtSource) {
		t.Errorf("contact %d deleted on the portal: %s, want %s", gone, st, engine.DeletedAtSource)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'contacts' AND status = 'DELETED_AT_SOURCE'`); n != 1 {
		t.Errorf("%d contacts concluded deleted, want 1", n)
	}
}
