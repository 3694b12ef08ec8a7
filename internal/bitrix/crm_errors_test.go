package bitrix_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// The portal's documented refusals stop get with the portal's code and the entity named.
func TestCRMRefusalsNameTheEntityAndCause(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		opts   func(*bitrixfake.Options)
		entity string
		want   string
	}{
		{"extranet webhook", func(o *bitrixfake.Options) { o.Extranet = true }, bitrix.Companies, "allowed_only_intranet_user"},
		{"no CRM rights", func(o *bitrixfake.Options) { o.DenyCRM = true }, bitrix.Deals, "ACCESS_DENIED"},
		{"no CRM rights, types", func(o *bitrixfake.Options) { o.DenyCRM = true }, bitrix.CRMTypes, "ACCESS_DENIED"},
		{"no workflow rights", func(o *bitrixfake.Options) { o.DenyBizproc = true }, bitrix.Workflows, "Access denied!"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			opts := crmOptions(3)
			c.opts(&opts)
			v := newEnv(t, opts)
			_, err := v.engine().Get(v.ctx, c.entity)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.entity) {
				t.Errorf("%s get: %v; want an error naming %s and %q", c.entity, err, c.entity, c.want)
			}
		})
	}
}

// A smart process type deleted after crm_types read it answers NOT_FOUND: its items are gone
// with it, the other types are read, and the warning says so.
func TestSmartGetSkipsAGoneType(t *testing.T) {
	t.Parallel()
	v := newEnv(t, crmOptions(5))
	e := v.engine()
	v.phases(e, bitrix.CRMTypes, "get")
	if _, err := v.pool.Exec(v.ctx, `INSERT INTO bitrix_records (entity, source_id, payload, checksum)
VALUES ('crm_types', '1999', '{"id": 99, "entityTypeId": 1999}', 'x')`); err != nil {
		t.Fatal(err)
	}
	st, err := e.Get(v.ctx, bitrix.Smart)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Of(bitrix.Smart).Rows, v.portal.CRM().SmartItems; got != want || !st.Complete {
		t.Errorf("smart get read %d items (complete %v), want %d", got, st.Complete, want)
	}
	if !strings.Contains(v.log.String(), "smart process type gone from the portal") {
		t.Error("no warning about the gone type")
	}
}

// test_limit reads the first deals and pulls in the companies and contacts they name (filtered
// by @id, the only form crm.item.list accepts), so that set can import them.
func TestCRMTestLimitPullsReferencedRecords(t *testing.T) {
	t.Parallel()
	v := newEnv(t, crmOptions(8))
	e := v.engine(func(c *engine.Config) {
		c.TestLimit = 5
	})
	st, err := e.Get(v.ctx, bitrix.Deals)
	if err != nil {
		t.Fatal(err)
	}
	if st.Of(bitrix.Deals).Rows != 5 || st.Of(bitrix.Companies).Rows == 0 || st.Of(bitrix.Contacts).Rows == 0 {
		t.Errorf("limited deals get: %+v", st.Counts)
	}
	rows, err := v.pool.Query(v.ctx, `SELECT payload FROM bitrix_records WHERE entity = 'deals'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p map[string]json.RawMessage
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		var contacts []int
		_ = json.Unmarshal(p["contactIds"], &contacts)
		for _, c := range contacts {
			if v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'contacts' AND source_id = $1`, strconv.Itoa(c)) != 1 {
				t.Errorf("contact %d of a limited deal was not pulled in", c)
			}
		}
	}
}

// A deal whose stage has no target id fails with that reason, named by id in status and verify;
// a deal changed on the target behind the importer's back is found field by field.
func TestCRMVerifyNamesFailedAndDifferingDeals(t *testing.T) {
	t.Parallel()
	v := newEnv(t, crmOptions(13))
	e := v.engine()
	v.migrateCRM(e)
	deals := v.portal.DealIDs()
	stuck, changed := strconv.Itoa(deals[5]), strconv.Itoa(deals[6])
	// The deal's stage loses its target id: set must fail it, not send it half-mapped.
	stage := jsonText(v.portal.DealRow(deals[5])["stageId"])
	if _, err := v.pool.Exec(v.ctx, `DELETE FROM bitrix_id_map WHERE entity = 'crm_stages' AND source_id = $1`, stage); err != nil {
		t.Fatal(err)
	}
	if _, err := v.pool.Exec(v.ctx, `UPDATE bitrix_records SET status = 'NEW' WHERE entity = 'deals' AND source_id = $1`, stuck); err != nil {
		t.Fatal(err)
	}
	v.phases(e, bitrix.Deals, "set")
	if r := v.record(bitrix.Deals, stuck); r.Status != engine.ImportErr || !strings.Contains(r.LastError, stage) {
		t.Errorf("deal %s: %s %q, want IMPORT_ERR naming stage %s", stuck, r.Status, r.LastError, stage)
	}
	if err := v.target.Corrupt(bitrix.Deals, "source:deals:"+changed, "opportunity", "1.00"); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Verify(v.ctx, bitrix.Deals)
	if err != nil {
		t.Fatal(err)
	}
	listed := func(issues []engine.RecordIssue, id string) bool {
		for _, i := range issues {
			if i.SourceID == id {
				return true
			}
		}
		return false
	}
	if rep.Clean() || !listed(rep.NotImported, stuck) {
		t.Errorf("verify did not list deal %s as not imported: %+v", stuck, rep.NotImported)
	}
	found := false
	for _, d := range rep.Differing {
		found = found || d.SourceID == changed && d.Field == "opportunity" && d.Got == `"1.00"`
	}
	if !found {
		t.Errorf("verify did not name deal %s's opportunity: %+v", changed, rep.Differing)
	}
}
