package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// An ID-range pass ends a range at its first short page, and a portal under load or replica lag
// may answer one page short, or empty, in the middle of a range: every record after it in the
// range goes unseen. Such a pass alone proves no deletion, so IDScan is a Confirmer: the records
// the pass did not see are asked for by id, and only those the portal no longer answers are
// deleted. Those it still has keep their status and data; the next get, a new pass over every
// range, reads them again.

// ConfirmGone makes IDScan a Confirmer: it asks the scan's own method, with its own filter and the
// ID in a list where the method documents one (IDListOp, 50 ids to a command, 50 commands to a
// batch: 1,000 records cost one request; else one id to a command), for the records by id, reading only what CountParams select, and returns those it
// answers no row for.
func (s *IDScan) ConfirmGone(ctx context.Context, env Env, ent *Entity, ids []string) ([]string, error) {
	bare := make([]string, len(ids))
	for i, id := range ids {
		b, ok := strings.CutPrefix(id, s.IDPrefix)
		if !ok {
			return nil, fmt.Errorf("%s %s: not an id of %s, whose ids start with %q", ent.Name, id, s.scope(ent), s.IDPrefix)
		}
		bare[i] = b
	}
	asks, err := s.askByIDs(bare, s.CountParams)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ent.Name, err)
	}
	for i := range asks {
		for j, id := range asks[i].ids {
			asks[i].ids[j] = s.IDPrefix + id
		}
	}
	idField := ent.idField()
	return askGone(ctx, env, ent, asks, s.Scan.RowsPath, func(row json.RawMessage) (string, error) {
		fields, err := FieldsOf(row)
		if err != nil {
			return "", err
		}
		id := Text(fields, idField)
		if id == "" {
			return "", fmt.Errorf("row without %s: %.200s", idField, row)
		}
		return s.IDPrefix + id, nil
	})
}

// askByIDs are the commands that read the records with the given ids (the rows' own, without
// IDPrefix): rest.Scan.ByIDs, each ask with its own key.
func (s *IDScan) askByIDs(ids []string, over map[string]any) ([]presenceAsk, error) {
	queries, err := s.Scan.ByIDs(ids, over)
	if err != nil {
		return nil, err
	}
	asks := make([]presenceAsk, len(queries))
	for i, q := range queries {
		asks[i] = presenceAsk{cmd: rest.Command{Key: fmt.Sprintf("p%d", i), Method: s.Scan.Method, Params: q.Params}, ids: q.IDs}
	}
	return asks, nil
}
