package bitrix_test

import (
	"slices"

	"github.com/jackc/pgx/v5"
	"strconv"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// TestPerRecordDeltaReadsTouchedOwnersOnly: after a complete pass of product rows and timeline
// comments, a delta of deals that read two of them again (their modified_at moved, as the deals'
// delta pass moves it) makes the next pass of each a delta that reads only those two deals' rows:
// a comment added to one is stored, a comment deleted from the other concluded deleted at once;
// a comment deleted from a deal the delta did not read stays (nothing said it changed), and the
// rows of a deal deleted since follow it.
func TestPerRecordDeltaReadsTouchedOwnersOnly(t *testing.T) {
	t.Parallel()
	v := newEnv(t, crmOptions(83))
	e := v.engine()
	for _, ent := range []string{bitrix.Users, bitrix.Companies, bitrix.Contacts, bitrix.Deals, bitrix.DealProducts, bitrix.CRMComments} {
		v.phases(e, ent, "get")
	}
	for _, ent := range []string{bitrix.DealProducts, bitrix.CRMComments} {
		if inv := v.inventory(ent); inv.Kind != engine.PassFull || !inv.Complete {
			t.Fatalf("%s: the first pass is %s, complete %v; want a complete full pass", ent, inv.Kind, inv.Complete)
		}
	}
	// Deals with timeline comments and product rows (less than a page: one command each): two
	// the deals' delta reads again, one it does not, one deleted.
	deals := v.idsOf(`SELECT d.source_id FROM bitrix_records d WHERE d.entity = 'deals'
AND EXISTS (SELECT 1 FROM bitrix_records c WHERE c.entity = 'crm_comments' AND lower(c.payload->>'ENTITY_TYPE') = 'deal'
  AND c.payload->>'ENTITY_ID' = d.source_id)
AND (SELECT count(*) FROM bitrix_records p WHERE p.entity = 'deal_products' AND p.payload->>'ownerId' = d.source_id) BETWEEN 1 AND 49
ORDER BY d.id LIMIT 4`)
	if len(deals) < 4 {
		t.Fatalf("only %d deals with comments and product rows", len(deals))
	}
	added, edited, untouched, deleted := deals[0], deals[1], deals[2], deals[3]
	dealID := func(s string) int { n, _ := strconv.Atoi(s); return n }
	newComment, err := v.portal.AddTimelineComment(bitrixfake.DeleteDeals, dealID(added))
	if err != nil {
		t.Fatal(err)
	}
	goneComment := v.portal.TimelineCommentIDs(bitrixfake.DeleteDeals, dealID(edited))[0]
	keptComment := v.portal.TimelineCommentIDs(bitrixfake.DeleteDeals, dealID(untouched))[0]
	for _, id := range []int{goneComment, keptComment} {
		if err := v.portal.DeleteTimelineComment(id); err != nil {
			t.Fatal(err)
		}
	}
	v.deleteOnPortal(bitrixfake.DeleteDeals, deleted)
	// What the deals' delta pass does for these: reads two again, concludes one deleted.
	if _, err := v.pool.Exec(v.ctx, `UPDATE bitrix_records SET fetched_at = now(), modified_at = now() WHERE entity = 'deals' AND source_id = ANY($1)`,
		[]string{added, edited}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.pool.Exec(v.ctx, `UPDATE bitrix_records SET status = 'DELETED_AT_SOURCE', reason_code = 'deleted_at_source'
WHERE entity = 'deals' AND source_id = $1`, deleted); err != nil {
		t.Fatal(err)
	}
	calls := v.portal.Stats().Calls
	for _, ent := range []string{bitrix.DealProducts, bitrix.CRMComments} {
		v.phases(e, ent, "get")
		if inv := v.inventory(ent); inv.Kind != engine.PassDelta || !inv.Complete {
			t.Errorf("%s: the pass after the deals' delta is %s (%v), complete %v; want a complete delta", ent, inv.Kind, inv.Reason, inv.Complete)
		}
	}
	now := v.portal.Stats().Calls
	for _, m := range []string{"crm.item.productrow.list", "crm.timeline.comment.list"} {
		if n := now[m] - calls[m]; n != 2 {
			t.Errorf("the delta ran %s %d times, want twice (deals %s and %s)", m, n, added, edited)
		}
	}
	comment := func(id int) engine.Record { return v.record(bitrix.CRMComments, strconv.Itoa(id)) }
	if r := comment(newComment); r.Status != engine.StatusNew {
		t.Errorf("the comment added to deal %s is %s, want NEW", added, r.Status)
	}
	if r := comment(goneComment); r.Status != engine.DeletedAtSource {
		t.Errorf("the comment deleted from deal %s is %s, want %s", edited, r.Status, engine.DeletedAtSource)
	}
	if r := comment(keptComment); engine.IsDeleted(r.Status) {
		t.Errorf("the comment deleted from deal %s, which the deals' delta did not read, is %s: nothing said it changed", untouched, r.Status)
	}
	codes := v.idsOf(`SELECT DISTINCT reason_code FROM bitrix_records WHERE entity = 'crm_comments' AND source_id = $1`, strconv.Itoa(goneComment))
	if !slices.Equal(codes, []string{engine.CodeDeletedAtSource}) {
		t.Errorf("the deleted comment's reason code is %v, want %s", codes, engine.CodeDeletedAtSource)
	}
	for _, q := range []string{
		`SELECT count(*) FROM bitrix_records WHERE entity = 'crm_comments' AND lower(payload->>'ENTITY_TYPE') = 'deal' AND payload->>'ENTITY_ID' = $1 AND status <> $2`,
		`SELECT count(*) FROM bitrix_records WHERE entity = 'deal_products' AND payload->>'ownerId' = $1 AND status <> $2`,
	} {
		if n := v.count(q, deleted, string(engine.DeletedAtSource)); n != 0 {
			t.Errorf("%d rows of the deleted deal %s did not follow it: %s", n, deleted, q)
		}
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity IN ('crm_comments', 'deal_products') AND reason_code = $1`,
		engine.CodeParentDeleted); n == 0 {
		t.Error("the rows of the deleted deal followed it without the reason code of a parent deleted")
	}
	// Nothing else concluded: the rows of deals the delta did not read are as they were.
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity IN ('crm_comments', 'deal_products')
AND status = 'DELETED_AT_SOURCE' AND reason_code = $1`, engine.CodeDeletedAtSource); n != 1 {
		t.Errorf("%d rows concluded deleted, want the one comment", n)
	}
}

// idsOf returns the values of a one-column query, as text.
func (v *env) idsOf(sql string, args ...any) []string {
	v.t.Helper()
	rows, err := v.pool.Query(v.ctx, sql, args...)
	if err != nil {
		v.t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		v.t.Fatalf("%s: %v", sql, err)
	}
	return out
}
