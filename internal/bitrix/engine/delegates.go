package engine

import (
	"slices"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Delegates lists the portal user ids whose own webhooks the run has (Config.Delegates), in
// ascending order.
func (v Env) Delegates() []string {
	ids := SortedKeys(v.e.delegates)
	slices.SortFunc(ids, rest.CompareIDs)
	return ids
}
