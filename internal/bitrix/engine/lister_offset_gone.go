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

// ConfirmGone asks the portal for each record by id (ByID's parameters), 50 to a batch, and
// returns those it answers no row for.
func (o *OffsetPages) ConfirmGone(ctx context.Context, env Env, ent *Entity, ids []string) ([]string, error) {
	if o.ByID == nil {
		return nil, fmt.Errorf("%s: %s cannot be asked for a record by id", ent.Name, o.List.Method)
	}
	cmds := make([]rest.Command, len(ids))
	for i, id := range ids {
		cmds[i] = rest.Command{Key: "r" + strings.NewReplacer(":", "_").Replace(id), Method: o.List.Method, Params: o.ByID(id)}
	}
	byKey := map[string]string{}
	for i, c := range cmds {
		byKey[c.Key] = ids[i]
	}
	var gone []string
	err := env.BatchEach(ctx, cmds, func(key string, r *rest.Response) error {
		rows, err := r.Rows(o.List.RowsPath...)
		if err != nil {
			return fmt.Errorf("%s %s: %w", ent.Name, byKey[key], err)
		}
		if len(rows) == 0 {
			gone = append(gone, byKey[key])
		}
		return nil
	}, func(key string, err error) error {
		return fmt.Errorf("%s %s: is it still on the portal: %w", ent.Name, byKey[key], err)
	})
	if err != nil {
		return nil, err
	}
	return gone, nil
}
