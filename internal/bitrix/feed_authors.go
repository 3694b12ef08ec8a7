package bitrix

import (
	"context"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// textWithheld begins the reason of a feed comment whose text the portal sent empty.
const textWithheld = "text withheld by the portal"

// recoverShare is the share of the withheld comments the authors named first hold: a team asks
// those few for their webhooks first.
const recoverShare = 0.8

// maxNamedAuthors bounds the authors withheldAuthors names.
const maxNamedAuthors = 20

// withheldAuthors ranks, for `bitrix status`, the authors whose own webhook
// (BITRIX_AUTHOR_WEBHOOKS) would recover the most withheld comment texts: the fewest that hold
// 80% of them, most first ("12 authors hold 80% of them").
func withheldAuthors(ctx context.Context, e engine.Env, ent *engine.Entity) ([]string, error) {
	by, err := e.Store().CountUnreachableBy(ctx, engine.UnreachableBy{Entity: ent.Name, Field: "author_id", Because: textWithheld})
	if err != nil || len(by) == 0 {
		return nil, err
	}
	var total int64
	for _, a := range by {
		total += a.N
	}
	var held int64
	var named []string
	k := 0
	for _, a := range by {
		if float64(held) >= recoverShare*float64(total) {
			break
		}
		held += a.N
		k++
		if len(named) < maxNamedAuthors {
			named = append(named, fmt.Sprintf("user %s (%d)", a.Value, a.N))
		}
	}
	more := ""
	if k > len(named) {
		more = fmt.Sprintf(", and %d more", k-len(named))
	}
	return []string{fmt.Sprintf("%d comments' text withheld (by %d authors); %d authors hold %d%% of them (%d), whose own webhooks "+
		"(BITRIX_AUTHOR_WEBHOOKS) would recover them: %s%s", total, len(by), k, held*100/total, held, strings.Join(named, ", "), more)}, nil
}
