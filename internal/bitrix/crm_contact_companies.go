package bitrix

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A contact belongs to any number of companies, but crm.item.list sends companyId alone (its
// primary company): the documentation's own user notes call COMPANY_IDS a field no list or get
// returns. crm.contact.company.items.get always tells them, in the portal's order (SORT), with
// IS_PRIMARY on one. completeContacts asks it for every contact of a page, 50 contacts to a
// batch call, as deal_products reads product rows, and stores companyIds (that order) and
// companyId (the primary one); the links are translated and dropped like any other (companyIds
// is a Many, DropGone reference).

// contactCompaniesMethod tells a contact's companies.
const contactCompaniesMethod = "crm.contact.company.items.get"

// companyBinding is one row of crm.contact.company.items.get.
type companyBinding struct {
	CompanyID json.Number `json:"COMPANY_ID"`
	Sort      json.Number `json:"SORT"`
	IsPrimary string      `json:"IS_PRIMARY"`
}

// completeContacts fills in every contact's companyIds and companyId from
// crm.contact.company.items.get. A contact the portal refuses (deleted since the listing) keeps
// what the listing said, its primary company alone, and the refusal is logged.
func completeContacts(ctx context.Context, e engine.Env, rows []json.RawMessage) ([]json.RawMessage, error) {
	fields := make([]map[string]json.RawMessage, len(rows))
	at := map[string]int{}
	cmds := make([]rest.Command, 0, len(rows))
	for i, row := range rows {
		f, err := engine.FieldsOf(row)
		if err != nil {
			return nil, err
		}
		fields[i] = f
		id := engine.Text(f, "id")
		if primary := engine.Text(f, "companyId"); engine.None(primary) {
			f["companyIds"] = json.RawMessage("[]")
		} else {
			f["companyIds"] = engine.MustJSON([]string{primary})
		}
		at[id] = i
		cmds = append(cmds, rest.Command{Key: "c" + id, Method: contactCompaniesMethod, Params: map[string]any{"id": id}})
	}
	err := e.BatchEachConcurrently(ctx, cmds, func(key string, r *rest.Response) error {
		var links []companyBinding
		if string(r.Result) != "{}" { // PHP's empty array may come as an object
			if err := r.Decode(&links); err != nil {
				return fmt.Errorf("crm.contact.company.items.get contact %s: %w", key[1:], err)
			}
		}
		setCompanies(fields[at[key[1:]]], links)
		return nil
	}, func(key string, err error) error {
		e.Log().Warn("contact's companies unknown: crm.contact.company.items.get refused; its primary company alone is kept",
			"entity", Contacts, "source_id", key[1:], "error", err)
		return nil
	})
	out := make([]json.RawMessage, len(rows))
	for i, f := range fields {
		out[i] = engine.MustJSON(f)
	}
	return out, err
}

// setCompanies writes a contact's companies: companyIds in SORT order (stable: the portal's order
// where SORT ties), companyId the primary one (the listing's when none is marked).
func setCompanies(f map[string]json.RawMessage, links []companyBinding) {
	slices.SortStableFunc(links, func(a, b companyBinding) int {
		x, _ := a.Sort.Int64()
		y, _ := b.Sort.Int64()
		return cmp.Compare(x, y)
	})
	ids := make([]string, 0, len(links))
	for _, l := range links {
		id := l.CompanyID.String()
		if engine.None(id) || slices.Contains(ids, id) {
			continue
		}
		ids = append(ids, id)
		if l.IsPrimary == "Y" {
			f["companyId"] = engine.MustJSON(id)
		}
	}
	f["companyIds"] = engine.MustJSON(ids)
}
