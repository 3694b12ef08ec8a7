package bitrix_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// A contact arrives with all its companies, in the portal's order, as target ids (companyIds),
// and companyId names its primary one, though crm.item.list tells the primary alone and the
// primary is not always first; the deleted company one contact still names is dropped.
func TestContactsKeepEveryCompany(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 20, Seed: 12, Companies: 30, Contacts: 80})
	e := v.engine()
	for _, entity := range []string{bitrix.Users, bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts} {
		if err := e.Run(v.ctx, entity); err != nil {
			t.Fatalf("run %s: %v", entity, err)
		}
	}
	deleted := v.portal.CRM().DeletedCompany
	several, primaryNotFirst, dropped := 0, 0, 0
	for _, id := range v.portal.PortalIDs(bitrixfake.DeleteContacts) {
		companies, primary := v.portal.ContactCompanies(id)
		want := []string{}
		for _, c := range companies {
			if c == deleted {
				dropped++
				continue
			}
			want = append(want, v.targetID(bitrix.Companies, strconv.Itoa(c)))
		}
		if len(companies) > 1 {
			several++
			if companies[0] != primary {
				primaryNotFirst++
			}
		}
		got := v.onTarget(bitrix.Contacts, strconv.Itoa(id))
		var ids []string
		if err := json.Unmarshal(got["companyIds"], &ids); err != nil {
			t.Fatalf("contact %d companyIds %s: %v", id, got["companyIds"], err)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("contact %d companyIds %v, want %v (portal %v)", id, ids, want, companies)
		}
		wantPrimary := "null" // none (the portal's 0), or the deleted company's link dropped
		if primary != 0 && primary != deleted {
			wantPrimary = strconv.Quote(v.targetID(bitrix.Companies, strconv.Itoa(primary)))
		}
		if p := string(got["companyId"]); p != wantPrimary {
			t.Errorf("contact %d companyId %s, want %s", id, p, wantPrimary)
		}
	}
	if several == 0 || primaryNotFirst == 0 || dropped == 0 {
		t.Errorf("the portal should have contacts with several companies (%d), the primary not first (%d), a deleted one (%d)",
			several, primaryNotFirst, dropped)
	}
}
