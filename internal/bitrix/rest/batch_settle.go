package rest

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNoResult is what a batch command without a result of its own wraps (see MissingError):
// the portal skipped it, left it out of the answer, or failed it with an error the answer did
// not tie to it. Sending the command again is the remedy.
var ErrNoResult = errors.New("bitrix batch: command has no result")

// MissingError is a batch command the answer gave neither a result nor an error of its own.
type MissingError struct {
	Key, Method string
	// Halted: halt stopped the batch at an earlier command's failure.
	Halted bool
	// Unmatched are the errors the answer did not tie to any command; one of them may be this
	// command's, or none.
	Unmatched []*APIError
	// Tries is how many answers left the command without a result.
	Tries int
}

func (e *MissingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bitrix batch command %s (%s): ", e.Key, e.Method)
	switch {
	case e.Halted:
		b.WriteString(ErrNotExecuted.Error())
	case len(e.Unmatched) > 0:
		fmt.Fprintf(&b, "no result in %d answer(s); the batch reported errors it did not tie to a command:", e.Tries)
		for i, u := range e.Unmatched {
			if i > 0 {
				b.WriteByte(';')
			}
			fmt.Fprintf(&b, " %s", strings.TrimPrefix(u.Error(), "bitrix batch: "))
		}
	default:
		fmt.Fprintf(&b, "absent from %d answer(s), with no error", e.Tries)
	}
	return b.String()
}

// Is makes a MissingError match ErrNoResult, and ErrNotExecuted when halt stopped the batch.
func (e *MissingError) Is(target error) bool {
	return target == ErrNoResult || (e.Halted && target == ErrNotExecuted)
}

// NoResult reports whether err is a batch command's lack of a result: worth sending again.
func NoResult(err error) bool { return errors.Is(err, ErrNoResult) }

// Passing reports whether err, a batch command's, is worth sending again at once: no result of
// its own (NoResult), or a refusal of the command that says nothing about it (the portal's
// rate limit or an internal error reported inside the batch). Operating-time refusals are not:
// the client pauses the method, and callers send those again after the pause.
func Passing(err error) bool {
	if NoResult(err) {
		return true
	}
	e, ok := errors.AsType[*APIError](err)
	return ok && e.HTTPStatus == 0 && passingCode(e)
}

func passingCode(e *APIError) bool {
	return e.codeIs(CodeQueryLimitExceeded) || e.codeIs(CodeInternalServerError) || e.codeIs(CodeUnexpectedAnswer)
}

// BatchFunc sends one batch; Client.Batch is one.
type BatchFunc func(ctx context.Context, cmds []Command, halt bool) (*BatchResult, error)

// settleRounds bounds how often Settle sends again the commands an answer left without a
// result: once all together (a passing failure), then each alone, where an error can only be
// its own, then each alone once more.
const settleRounds = 3

// Settle runs independent read commands (none refers to another's answer) in one batch
// without halt, and sends again those the answer left with neither a result nor an error of
// their own, which is what an unkeyed result_error or a command left out of the answer means,
// and those refused for a passing reason (Passing):
// first together, then one command to a batch, so that an error the portal does not key is
// still the command's own. Commands answered or failed are never sent again, so an unmatched
// error costs the commands without a result, not the whole batch. A command still without a
// result after settleRounds answers gets a *MissingError naming it and the errors seen.
func Settle(ctx context.Context, batch BatchFunc, cmds []Command) (*BatchResult, error) {
	res, err := batch(ctx, cmds, false)
	if err != nil {
		return nil, err
	}
	tries := map[string]int{}
	for round := 1; round <= settleRounds; round++ {
		left := res.silent(cmds)
		if len(left) == 0 {
			return res, nil
		}
		for _, c := range left {
			tries[c.Key]++
		}
		groups := [][]Command{left}
		if round > 1 || len(left) == 1 {
			groups = groups[:0]
			for _, c := range left {
				groups = append(groups, []Command{c})
			}
		}
		for _, g := range groups {
			again, err := batch(ctx, g, false)
			if err != nil {
				return nil, err
			}
			res.merge(again, g)
		}
	}
	for _, c := range res.silent(cmds) {
		if res.missing == nil {
			res.missing = map[string]error{}
		}
		res.missing[c.Key] = &MissingError{Key: c.Key, Method: c.Method, Unmatched: res.Unmatched, Tries: tries[c.Key] + 1}
	}
	return res, nil
}

// silent returns the commands with neither a result nor an error of their own, and those
// refused for a passing reason (Passing).
func (b *BatchResult) silent(cmds []Command) []Command {
	var out []Command
	for _, c := range cmds {
		_, answered := b.Results[c.Key]
		e, failed := b.Errors[c.Key]
		_, given := b.missing[c.Key] // an answer too large on its own: the same again
		if !answered && !given && (!failed || passingCode(e)) {
			out = append(out, c)
		}
	}
	return out
}

// Adopt takes the answers of cmds from a later batch (or Settle) that sent them again: their
// results, errors and, for those Settle gave up on, their *MissingError. The unmatched errors
// become the later batch's: those of the first answer belonged to commands now settled or to
// these ones.
func (b *BatchResult) Adopt(again *BatchResult, cmds []Command) { b.merge(again, cmds) }

func (b *BatchResult) merge(again *BatchResult, cmds []Command) {
	for _, c := range cmds {
		k := c.Key
		if r, ok := again.Results[k]; ok {
			b.Results[k] = r
			delete(b.Errors, k)
		}
		if e, ok := again.Errors[k]; ok {
			b.Errors[k] = e
		}
		if n, ok := again.Totals[k]; ok {
			b.Totals[k] = n
		}
		if n, ok := again.Nexts[k]; ok {
			b.Nexts[k] = n
		}
		if t, ok := again.Times[k]; ok {
			b.Times[k] = t
		}
		if e, ok := again.missing[k]; ok {
			if b.missing == nil {
				b.missing = map[string]error{}
			}
			b.missing[k] = e
		}
		if b.methods == nil {
			b.methods = map[string]string{}
		}
		b.methods[k] = c.Method
	}
	b.Unmatched = again.Unmatched
}
