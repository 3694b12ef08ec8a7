package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
// IDPrefix) with the scan's method, its parameters (over's keys replacing theirs) and its filter
// with the ID in a list, 50 ids to a command (or, for a method without a documented list
// operator, the ID equal to one id a command), without counting. Each ask's ids are its own copy.
func (s *IDScan) askByIDs(ids []string, over map[string]any) ([]presenceAsk, error) {
	filterParam := s.Scan.FilterParam
	if filterParam == "" {
		filterParam = "filter"
	}
	var asks []presenceAsk
	perAsk := rest.PageSize
	if s.Scan.IDListOp == "" {
		perAsk = 1
	}
	for chunk := range slices.Chunk(ids, perAsk) {
		params := maps.Clone(s.Scan.Params)
		if params == nil {
			params = map[string]any{}
		}
		maps.Copy(params, over)
		filter := map[string]any{}
		if f, ok := params[filterParam]; ok {
			fm, ok := f.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: %s must be a map[string]any, not %T", s.Scan.Method, filterParam, f)
			}
			maps.Copy(filter, fm)
		}
		if s.Scan.IDListOp == "" {
			filter[s.Scan.IDFilterField()] = chunk[0]
		} else {
			filter[s.Scan.IDListOp+s.Scan.IDFilterField()] = slices.Clone(chunk)
		}
		params[filterParam] = filter
		params["start"] = -1 // no count: the answer is at most one page
		cmd := rest.Command{Key: fmt.Sprintf("p%d", len(asks)), Method: s.Scan.Method, Params: params}
		asks = append(asks, presenceAsk{cmd: cmd, ids: slices.Clone(chunk)})
	}
	return asks, nil
}
