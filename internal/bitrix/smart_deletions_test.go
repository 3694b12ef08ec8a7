package bitrix_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// TestEmptySmartPageDeletesNothing has the portal answer a page of one smart process type's items
// empty in the middle of its range: the items the pass missed are asked for by id, type by
// type, and none is concluded deleted, even with --allow-mass-delete.
func TestEmptySmartPageDeletesNothing(t *testing.T) {
	t.Parallel()
	opts := crmOptions(49)
	opts.SmartItems = 120
	v := newEnv(t, opts)
	e := v.engine(func(c *engine.Config) { c.AllowMassDelete = true; c.Full = true }) // a full pass reads the page
	for _, ent := range []string{bitrix.Users, bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts, bitrix.Deals, bitrix.Smart} {
		v.phases(e, ent, "get", "set", "verify")
	}
	after := v.pick(`SELECT split_part(source_id, ':', 2) FROM bitrix_records WHERE entity = 'smart' AND source_id LIKE '1038:%'
ORDER BY split_part(source_id, ':', 2)::int OFFSET 49 LIMIT 1`)
	id, _ := strconv.Atoi(after)
	v.portal.EmptyPageAfter("crm.item.list", id)
	faults := v.portal.Stats().Faults
	v.phases(e, bitrix.Smart, "get")
	if v.portal.Stats().Faults != faults+1 {
		t.Fatal("the portal answered no page empty: the test proves nothing")
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'smart' AND status = 'DELETED_AT_SOURCE'`); n != 0 {
		t.Fatalf("%d smart items concluded deleted after a page answered empty", n)
	}
	if !strings.Contains(v.log.String(), "records the pass missed are still on the portal") {
		t.Error("the items the pass missed were not reported as still on the portal")
	}
	v.phases(e, bitrix.Smart, "set", "verify")
}
