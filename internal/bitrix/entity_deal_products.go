package bitrix

import (
	"encoding/json"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// DealProducts are the product rows of deals (research/bitrix.md §5.7). crm.item.productrow.list
// reads the rows of one deal at a time (=ownerType and =ownerId are required, no list of owners
// is accepted), so reading them costs one command per deal: they are an entity with a command of
// their own, after deals, instead of a child that would make every deals get 50 times dearer.
const DealProducts = "deal_products"

func dealProductsEntity() *engine.Entity {
	return &engine.Entity{
		Name:     DealProducts,
		Noun:     "product rows",
		Help:     "product rows of every deal read (deals must be imported and verified first; one call per 50 deals)",
		Requires: []string{Deals},
		Lister: &engine.PerRecord{Of: []string{Deals}, Method: "crm.item.productrow.list", RowsPath: []string{"productRows"},
			Params: func(_, deal string) map[string]any {
				return map[string]any{"filter": map[string]any{"=ownerType": "D", "=ownerId": deal},
					"order": map[string]any{"id": "asc"}}
			},
			Gone: func(err error) bool { return rest.HasCode(err, "NOT_FOUND") }},
		IDField: "id",
		Refs:    []engine.Ref{{Field: "ownerId", Name: "deal", Entity: Deals}},
		Batch:   100,
		Shapes:  engine.Shapes{Decimals: crmMoney, IDs: []string{"productId"}}, // productId as a string, as every id
		Finish: func(fields map[string]json.RawMessage, _ engine.Record, _ *engine.Refs) error {
			return decimalStrings(fields, crmMoney)
		},
		NoFields: "product rows have no custom fields",
		NotMigrated: []string{"the catalog's products themselves: productId is sent as the portal's id, " +
			"with the row's own name, price, quantity, tax and measure"},
	}
}
