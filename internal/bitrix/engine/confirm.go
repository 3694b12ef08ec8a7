package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// ErrFilterIgnored is the failure of a confirmation whose answer holds records it did not ask
// for: the method ignored the filter on ids, so it cannot tell which records are gone.
var ErrFilterIgnored = errors.New("the portal ignored the filter on ids")

// presenceAsk is one command asking the portal for records by id: ids are the records it asks for.
type presenceAsk struct {
	cmd rest.Command
	ids []string
}

// askGone sends the asks, 50 commands to a batch, and returns the asked ids no answer has a row
// for, in the order they were asked. rowID names the record a row is; nil means an ask is for one
// record and any row in its answer is that record.
func askGone(ctx context.Context, env Env, ent *Entity, asks []presenceAsk, rowsPath []string,
	rowID func(row json.RawMessage) (string, error)) ([]string, error) {
	cmds := make([]rest.Command, len(asks))
	byKey := make(map[string]presenceAsk, len(asks))
	for i, a := range asks {
		cmds[i] = a.cmd
		byKey[a.cmd.Key] = a
	}
	there := map[string]bool{}
	err := env.BatchEachConcurrently(ctx, cmds, func(key string, r *rest.Response) error {
		a := byKey[key]
		rows, err := r.Rows(rowsPath...)
		if err != nil {
			return fmt.Errorf("%s %s: %w", ent.Name, askedText(a.ids), err)
		}
		for _, row := range rows {
			if rowID == nil {
				there[a.ids[0]] = true
				break
			}
			id, err := rowID(row)
			if err != nil {
				return fmt.Errorf("%s %s: %w", ent.Name, askedText(a.ids), err)
			}
			// A row not asked for means the method ignored the id filter: its answer proves no
			// absence, and taking it for one would delete records the portal has.
			if !slices.Contains(a.ids, id) {
				return fmt.Errorf("%s %s: %s answered %s, not asked for: %w", ent.Name, askedText(a.ids), a.cmd.Method, id, ErrFilterIgnored)
			}
			there[id] = true
		}
		return nil
	}, func(key string, err error) error {
		return fmt.Errorf("%s %s: are they still on the portal: %w", ent.Name, askedText(byKey[key].ids), err)
	})
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, a := range asks {
		for _, id := range a.ids {
			if !there[id] {
				gone = append(gone, id)
			}
		}
	}
	return gone, nil
}

// askedText names the records of one ask in an error.
func askedText(ids []string) string {
	if len(ids) == 1 {
		return ids[0]
	}
	return fmt.Sprintf("%d records from %s to %s", len(ids), ids[0], ids[len(ids)-1])
}
