package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/ingest-dev/ingest/internal/httplimit"
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

// splitTooLarge answers a read-only batch whose answer passed the cap (tooLarge) by sending
// its two halves, and again the halves of a half still too large. The portal sends the same
// answer to the same batch, but a batch's answer is the sum of its commands': so one command
// whose own answer is too large fails alone with the cap in its error (a *TooLargeError, from
// Response), found in about 2 log2(n) more requests, and the others still get their results,
// instead of every record of the batch failing with it. When both halves are still too large,
// the size does not come from one command (a gzip bomb answers every request alike, or every
// command is huge): splitting on would cost a request per command for nothing, so every command
// of both halves fails with the cap.
func (c *Client) splitTooLarge(ctx context.Context, cmds []Command, tooLarge error) (*BatchResult, error) {
	if len(cmds) == 1 {
		return tooLargeResult(cmds, tooLarge), nil
	}
	half := len(cmds) / 2
	c.log.Warn("bitrix batch answer too large, sending it again in two halves",
		"commands", len(cmds), "first", cmds[0].Method, "error", tooLarge)
	parts := [2][]Command{cmds[:half], cmds[half:]}
	var res [2]*BatchResult
	var errs [2]error
	for i, part := range parts {
		res[i], errs[i] = c.batch(ctx, part, false, false)
		if errs[i] != nil && !errors.Is(errs[i], httplimit.ErrTooLarge) {
			return nil, errs[i]
		}
	}
	if errs[0] != nil && errs[1] != nil {
		return tooLargeResult(cmds, errs[1]), nil
	}
	for i, part := range parts {
		if errs[i] == nil {
			continue
		}
		r, err := c.splitTooLarge(ctx, part, errs[i])
		if err != nil {
			return nil, err
		}
		res[i] = r
	}
	unmatched := append(res[0].Unmatched, res[1].Unmatched...)
	res[0].merge(res[1], parts[1])
	res[0].Unmatched = unmatched
	res[0].Time = res[1].Time
	return res[0], nil
}

// tooLargeResult is the answer of commands that each fail with err, an answer over the cap.
func tooLargeResult(cmds []Command, err error) *BatchResult {
	res := &BatchResult{Results: map[string]json.RawMessage{}, Errors: map[string]*APIError{},
		Totals: map[string]int{}, Nexts: map[string]int{}, Times: map[string]Time{},
		methods: map[string]string{}, missing: map[string]error{}}
	for _, c := range cmds {
		res.methods[c.Key] = c.Method
		res.missing[c.Key] = fmt.Errorf("bitrix batch command %s (%s): %w", c.Key, c.Method, err)
	}
	return res
}
