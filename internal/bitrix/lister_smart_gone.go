package bitrix

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// ConfirmGone makes smartItems an engine.Confirmer: the items a pass did not see are asked for
// by id, type by type, each with its type's own ID scan (a page answered empty ends a type's range
// as it ends any other); a type the portal no longer has (NOT_FOUND) took its items with it.
func (smartItems) ConfirmGone(ctx context.Context, env engine.Env, ent *engine.Entity, ids []string) ([]string, error) {
	byType := map[int][]string{}
	var types []int
	for _, id := range ids {
		prefix, _, ok := strings.Cut(id, ":")
		et, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s %s: not an item id (<entityTypeId>:<id>)", ent.Name, id)
		}
		if byType[et] == nil {
			types = append(types, et)
		}
		byType[et] = append(byType[et], id)
	}
	var gone []string
	for _, et := range types {
		g, err := smartScan(et).ConfirmGone(ctx, env, ent, byType[et])
		switch {
		case rest.HasCode(err, "NOT_FOUND"):
			g = byType[et]
		case err != nil:
			return nil, fmt.Errorf("smart process %d: %w", et, err)
		}
		gone = append(gone, g...)
	}
	return gone, nil
}
