package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// independent reports whether no command refers to another's answer ($result[...] in its
// parameters, as the portal reads them): only such a batch can be sent in parts.
func independent(cmds []Command) bool {
	for _, cmd := range cmds {
		query, err := BuildQuery(cmd.Params)
		if err != nil {
			return false
		}
		if q, err := url.QueryUnescape(query); err != nil || strings.Contains(q, "$result[") {
			return false
		}
	}
	return true
}

// splitTooLarge answers a read-only batch whose answer passed the cap (tooLarge) by sending it
// again in two halves, each halved again while still too large. The portal sends the same
// answer to the same batch, but a batch's answer is the sum of its commands': so one command
// whose own answer is too large fails alone with the cap in its error (a *TooLargeError, from
// Response), and the others still get their results, instead of every record of the batch
// failing with the one that is too large.
func (c *Client) splitTooLarge(ctx context.Context, cmds []Command, tooLarge error) (*BatchResult, error) {
	if len(cmds) == 1 {
		res := &BatchResult{Results: map[string]json.RawMessage{}, Errors: map[string]*APIError{},
			Totals: map[string]int{}, Nexts: map[string]int{}, Times: map[string]Time{},
			methods: map[string]string{cmds[0].Key: cmds[0].Method},
			missing: map[string]error{cmds[0].Key: fmt.Errorf("bitrix batch command %s (%s): %w", cmds[0].Key, cmds[0].Method, tooLarge)}}
		return res, nil
	}
	half := len(cmds) / 2
	c.log.Warn("bitrix batch answer too large, sending it again in two halves",
		"commands", len(cmds), "first", cmds[0].Method, "error", tooLarge)
	first, err := c.Batch(ctx, cmds[:half], false)
	if err != nil {
		return nil, err
	}
	second, err := c.Batch(ctx, cmds[half:], false)
	if err != nil {
		return nil, err
	}
	unmatched := append(first.Unmatched, second.Unmatched...)
	first.merge(second, cmds[half:])
	first.Unmatched = unmatched
	first.Time = second.Time
	return first, nil
}
