package bitrix_test

import (
	"strconv"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestQuietTimelineCommentWaitsForAFullPass: the documentation says lastActivityTime is the
// "date and time of the last activity in the timeline" (crm/universal/object-fields.md), not that
// a timeline comment is such an activity. On a portal where it is not (the fake's QuietTimeline),
// a comment added to an otherwise unchanged deal moves nothing the deals' delta filters on: the
// delta passes of deals and of crm_comments complete without it, and the next full pass
// (--full, or BITRIX_FULL_EVERY) reads it. This is the degradation docs/bitrix-delta.md states.
func TestQuietTimelineCommentWaitsForAFullPass(t *testing.T) {
	t.Parallel()
	opts := crmOptions(84)
	opts.QuietTimeline = true
	v := newEnv(t, opts)
	ents := []string{bitrix.Users, bitrix.Companies, bitrix.Contacts, bitrix.Deals, bitrix.CRMComments}
	e := v.engine()
	for _, ent := range ents {
		v.phases(e, ent, "get")
	}
	deals := v.idsOf(`SELECT source_id FROM bitrix_records WHERE entity = 'deals' ORDER BY id LIMIT 1`)
	if len(deals) == 0 {
		t.Fatal("no deal stored")
	}
	deal, _ := strconv.Atoi(deals[0])
	comment, err := v.portal.AddTimelineComment(bitrixfake.DeleteDeals, deal)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() int {
		return v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'crm_comments' AND source_id = $1`, strconv.Itoa(comment))
	}

	for _, ent := range ents {
		v.phases(e, ent, "get")
	}
	for _, ent := range []string{bitrix.Deals, bitrix.CRMComments} {
		if inv := v.inventory(ent); inv.Kind != engine.PassDelta || !inv.Complete {
			t.Fatalf("%s: the rerun is %s (%s), complete %v; want a complete delta", ent, inv.Kind, reasonOf(inv), inv.Complete)
		}
	}
	if n := stored(); n != 0 {
		t.Fatalf("the comment added to deal %d was read by a delta pass on a portal that moved no date of the deal (%d rows): "+
			"this test no longer shows the degradation it documents", deal, n)
	}

	full := v.engine(func(c *engine.Config) { c.Full = true })
	for _, ent := range ents {
		v.phases(full, ent, "get")
	}
	if inv := v.inventory(bitrix.CRMComments); inv.Kind != engine.PassFull || !inv.Complete {
		t.Fatalf("crm_comments: the pass with --full is %s (%s), complete %v", inv.Kind, reasonOf(inv), inv.Complete)
	}
	if n := stored(); n != 1 {
		t.Errorf("the comment added to deal %d: %d rows after a full pass, want 1", deal, n)
	}
}

// TestProductRowAloneWaitsForAFullPass: the product row pages (crm.item.productrow.add, .update,
// .delete) say nothing of the deal's own fields moving, and the fake moves none (products.go). A
// row added to an otherwise unchanged deal is then not read by the delta passes of deals and
// deal_products, which read the rows of the deals the deals' delta touched; the next full pass
// reads it. On a portal whose deal's updatedTime moves with its rows, the deals' delta reads the
// deal and its rows at once.
func TestProductRowAloneWaitsForAFullPass(t *testing.T) {
	t.Parallel()
	v := newEnv(t, crmOptions(85))
	ents := []string{bitrix.Users, bitrix.Companies, bitrix.Contacts, bitrix.Deals, bitrix.DealProducts}
	e := v.engine()
	for _, ent := range ents {
		v.phases(e, ent, "get")
	}
	deals := v.idsOf(`SELECT source_id FROM bitrix_records WHERE entity = 'deals' ORDER BY id LIMIT 1`)
	if len(deals) == 0 {
		t.Fatal("no deal stored")
	}
	deal, _ := strconv.Atoi(deals[0])
	row, err := v.portal.AddProductRow(deal)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() int {
		return v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'deal_products' AND source_id = $1`, strconv.Itoa(row))
	}

	for _, ent := range ents {
		v.phases(e, ent, "get")
	}
	for _, ent := range []string{bitrix.Deals, bitrix.DealProducts} {
		if inv := v.inventory(ent); inv.Kind != engine.PassDelta || !inv.Complete {
			t.Fatalf("%s: the rerun is %s (%s), complete %v; want a complete delta", ent, inv.Kind, reasonOf(inv), inv.Complete)
		}
	}
	if n := stored(); n != 0 {
		t.Fatalf("the product row added to deal %d was read by a delta pass on a portal that moved no date of the deal (%d rows): "+
			"this test no longer shows the degradation it documents", deal, n)
	}

	full := v.engine(func(c *engine.Config) { c.Full = true })
	for _, ent := range ents {
		v.phases(full, ent, "get")
	}
	if n := stored(); n != 1 {
		t.Errorf("the product row added to deal %d: %d rows after a full pass, want 1", deal, n)
	}
}

// reasonOf is the reason an inventory row gives for its pass, "" when it gives none.
func reasonOf(inv engine.Inventory) string {
	if inv.Reason == nil {
		return ""
	}
	return *inv.Reason
}
