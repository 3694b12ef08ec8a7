package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// Offset paging and deletions: a record deleted before the cursor during a pass shifts the rest
// by one, so a complete pass may miss a record the portal still has. Such a pass alone proves no
// deletion: an OffsetPages without ByID never concludes one (Partial); with ByID, each record the
// pass did not see is asked for by id, and only those the portal no longer answers are deleted.

// Partial makes OffsetPages a PartialLister: it says why a pass cannot conclude deletions, or
// nothing when ByID lets it confirm them.
func (o *OffsetPages) Partial() string {
	if o.ByID != nil {
		return ""
	}
	return o.List.Method + " pages by offset, which a deletion during the pass shifts: a pass may miss a record the portal has"
}

// Confirmer is a Lister that confirms, record by record, that the records a complete pass did not
// see are gone from the portal; the deletion pass concludes only those.
type Confirmer interface {
	Lister
	ConfirmGone(ctx context.Context, env Env, ent *Entity, ids []string) ([]string, error)
}

// ConfirmGone asks the portal for each record by id (ByID's parameters), one command a record and
// 50 to a batch, and returns those it answers no row for.
func (o *OffsetPages) ConfirmGone(ctx context.Context, env Env, ent *Entity, ids []string) ([]string, error) {
	if o.ByID == nil {
		return nil, fmt.Errorf("%s: %s cannot be asked for a record by id", ent.Name, o.List.Method)
	}
	asks := make([]presenceAsk, len(ids))
	for i, id := range ids {
		key := "r" + strings.NewReplacer(":", "_").Replace(id)
		asks[i] = presenceAsk{cmd: rest.Command{Key: key, Method: o.List.Method, Params: o.ByID(id)}, ids: ids[i : i+1]}
	}
	return askGone(ctx, env, ent, asks, o.List.RowsPath, nil)
}
