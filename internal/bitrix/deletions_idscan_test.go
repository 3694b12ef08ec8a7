package bitrix_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestEmptyPageInARangeDeletesNothing has the portal answer one page of the deals' ID range
// empty, in the middle of the range, while a deal after it was really deleted: the range ends
// there and the pass misses the 79 deals after the page. They are asked for by id: the deleted
// one is concluded, the others stay as they were, verify passes after a set, and the next get
// reads them all again. With --allow-mass-delete too: the refusal is not what saves them.
func TestEmptyPageInARangeDeletesNothing(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run("allow-mass-delete="+strconv.FormatBool(allow), func(t *testing.T) {
			t.Parallel()
			emptyPageInARange(t, allow)
		})
	}
}

func emptyPageInARange(t *testing.T, allowMassDelete bool) {
	v := newEnv(t, crmOptions(48))
	e := v.engine(func(c *engine.Config) {
		c.AllowMassDelete = allowMassDelete
	})
	for _, ent := range []string{bitrix.Users, bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts, bitrix.Deals} {
		v.phases(e, ent, "get", "set", "verify")
	}
	ids := v.portal.PortalIDs(bitrixfake.DeleteDeals)
	if len(ids) < 120 {
		t.Fatalf("%d deals: the range needs pages after the empty one", len(ids))
	}
	victim := strconv.Itoa(ids[100])
	v.deleteOnPortal(bitrixfake.DeleteDeals, victim)
	v.portal.EmptyPageAfter("crm.item.list", ids[49])
	faults := v.portal.Stats().Faults

	st, err := e.Get(v.ctx, bitrix.Deals)
	if err != nil {
		t.Fatalf("get with a page answered empty: %v", err)
	}
	if v.portal.Stats().Faults != faults+1 {
		t.Fatal("the portal answered no page empty: the test proves nothing")
	}
	if !strings.Contains(v.log.String(), "records the pass missed are still on the portal") {
		t.Error("the deals the pass missed were not reported as still on the portal")
	}
	deleted := `SELECT count(*) FROM bitrix_records WHERE entity = 'deals' AND status = 'DELETED_AT_SOURCE'`
	if n := v.count(deleted); n != 1 || st.Deleted != 1 || v.record(bitrix.Deals, victim).Status != engine.DeletedAtSource {
		t.Fatalf("%d deals concluded deleted (get says %d), deal %s is %s; want only the deleted deal", n, st.Deleted, victim,
			v.record(bitrix.Deals, victim).Status)
	}
	v.phases(e, bitrix.Deals, "set", "verify")
	r := v.lastVerify(bitrix.Deals)
	requireCountsHold(t, r)
	if len(r.Problems) != 0 {
		t.Errorf("verify after the missed pass: %v", r.Problems)
	}

	// The next get is a new pass: it reads every deal again, the missed ones included.
	st, err = e.Get(v.ctx, bitrix.Deals)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Counts[bitrix.Deals]; c == nil || c.Rows != len(ids)-1 || st.Deleted != 0 {
		t.Errorf("the next get read %+v and deleted %d; want the %d deals the portal has, none deleted", c, st.Deleted, len(ids)-1)
	}
}

// TestEmptySmartPageDeletesNothing has the portal answer a page of one smart process type's items
// empty in the middle of its range: the items the pass missed are asked for by id, type by
// type, and none is concluded deleted, even with --allow-mass-delete.
func TestEmptySmartPageDeletesNothing(t *testing.T) {
	t.Parallel()
	opts := crmOptions(49)
	opts.SmartItems = 120
	v := newEnv(t, opts)
	e := v.engine(func(c *engine.Config) {
		c.AllowMassDelete = true
	})
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

// TestIgnoredIDFilterDeletesNothing has a portal whose crm.item.list leaves the @id filter out
// (lists as if it were not there) while a page of the deals' range is answered empty: the
// confirmation's answers hold deals it did not ask for, which proves nothing about the ones it
// did, so the get fails naming that (ErrFilterIgnored) and no deal is concluded deleted.
func TestIgnoredIDFilterDeletesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t, crmOptions(49))
	e := v.engine(func(c *engine.Config) {
		c.AllowMassDelete = true
	})
	for _, ent := range []string{bitrix.Users, bitrix.CRMTypes, bitrix.CRMCategories, bitrix.Companies, bitrix.Contacts, bitrix.Deals} {
		v.phases(e, ent, "get", "set", "verify")
	}
	ids := v.portal.PortalIDs(bitrixfake.DeleteDeals)
	v.portal.EmptyPageAfter("crm.item.list", ids[49])
	v.portal.IgnoreFilterKey("crm.item.list", "@id")
	faults := v.portal.Stats().Faults

	_, err := e.Get(v.ctx, bitrix.Deals)
	if !errors.Is(err, engine.ErrFilterIgnored) {
		t.Fatalf("get whose confirmation the portal answered without its id filter: %v, want ErrFilterIgnored", err)
	}
	if v.portal.Stats().Faults < faults+2 {
		t.Fatal("the portal neither answered a page empty nor left a filter out: the test proves nothing")
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'deals' AND status = 'DELETED_AT_SOURCE'`); n != 0 {
		t.Fatalf("%d deals concluded deleted from answers that ignored the filter", n)
	}
}
