package bitrixfake

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Answers recorded from real portals differ from the documentation's tidy examples
// (research/bitrix.md §1-§3 and the recordings behind issue 31). Shapes makes the portal send
// them, so that a client is tried against what it will meet.

// Shapes selects answer shapes real portals send besides the documented ones. The zero value
// answers as the documentation shows.
type Shapes struct {
	// UnkeyedErrors sends a batch's result_error as a JSON list of the errors, without the keys
	// of the commands they belong to.
	UnkeyedErrors bool
	// PositionKeys answers a batch keyed by the commands' positions 0, 1, 2... instead of their
	// keys, as when the commands were sent as a list: result, result_time, result_total,
	// result_next and result_error are JSON lists while the keys run from 0 without a gap (a
	// failed command is left out of result, so they often do not).
	PositionKeys bool
	// PageTotal makes a counted list answer report its page's row count as the total (next: 50,
	// total: 50), not the count of every matching row.
	PageTotal bool
	// TimeGeneration is the time block's generation: 0 the current one (operating and
	// operating_reset_at), 1 the oldest (no operating*), 2 operating only, 3 the 2025 one (start
	// an integer, processing 0, operating and operating_reset_at).
	TimeGeneration int
	// PlainQueryLimit answers 503 QUERY_LIMIT_EXCEEDED with a plain-text body, not the JSON
	// envelope.
	PlainQueryLimit bool
	// ErrorCode, when set, replaces the code of every error the portal sends: "" (an empty
	// code), "100" (the string), "int:100" (the integer 100).
	ErrorCode *string
}

// FailCommands makes the next n runs of the REST method inside a batch fail with the error code
// (HTTP status as the portal gives it: 429 for OPERATION_TIME_LIMIT, 503 for
// QUERY_LIMIT_EXCEEDED, 500 otherwise), before the method runs: a refusal under load.
func (p *Portal) FailCommands(method, code string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	method = strings.ToLower(method)
	for range n {
		p.commandFaults[method] = append(p.commandFaults[method], code)
	}
}

// commandFault returns the failure due for a batch command of the method, if any. The caller
// holds p.mu.
func (p *Portal) commandFault(method string) (answer, bool) {
	q := p.commandFaults[method]
	if len(q) == 0 {
		return answer{}, false
	}
	p.commandFaults[method] = q[1:]
	p.stats.Faults++
	code := q[0]
	switch code {
	case "OPERATION_TIME_LIMIT":
		p.stats.OperationLimit++
		return fail(http.StatusTooManyRequests, code, "Method is blocked due to operation time limit."), true
	case "QUERY_LIMIT_EXCEEDED":
		return fail(http.StatusServiceUnavailable, code, "Too many requests"), true
	}
	return fail(http.StatusInternalServerError, code, "Internal server error"), true
}

// errorCodeValue is the code as the error's JSON shows it (Shapes.ErrorCode).
func (p *Portal) errorCodeValue(code string) any {
	c := p.opts.Shapes.ErrorCode
	switch {
	case c == nil:
		return code
	case strings.HasPrefix(*c, "int:"):
		n, _ := strconv.Atoi(strings.TrimPrefix(*c, "int:"))
		return n
	}
	return *c
}

// shapedErrors renders a batch's result_error (Shapes.UnkeyedErrors).
func (p *Portal) shapedErrors(keys []string, errs map[string]any) any {
	if !p.opts.Shapes.UnkeyedErrors {
		return phpArray(keys, errs)
	}
	list := make([]any, 0, len(keys))
	for _, k := range keys {
		list = append(list, errs[k])
	}
	return list
}

// positions renames a batch's command keys to their positions (Shapes.PositionKeys).
func (p *Portal) positions(keys []string) map[string]string {
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		out[k] = k
		if p.opts.Shapes.PositionKeys {
			out[k] = strconv.Itoa(i)
		}
	}
	return out
}

// shapedTotal is the total a list answer reports (Shapes.PageTotal).
func (p *Portal) shapedTotal(a answer) *int {
	if a.total == nil || !p.opts.Shapes.PageTotal {
		return a.total
	}
	n := rowCount(a.result)
	if n > *a.total {
		return a.total
	}
	return &n
}

// rowCount counts the rows of a list answer: the result's own list, or the one list it holds
// (items, tasks, types...).
func rowCount(result any) int {
	b, err := appendJSON(nil, result)
	if err != nil {
		return 0
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return 0
	}
	switch t := v.(type) {
	case []any:
		return len(t)
	case map[string]any:
		for _, e := range t {
			if list, ok := e.([]any); ok {
				return len(list)
			}
		}
	}
	return 0
}

// shapeTime turns the current time block into the generation Shapes.TimeGeneration asks for.
func (p *Portal) shapeTime(t object, now time.Time) object {
	switch p.opts.Shapes.TimeGeneration {
	case 1, 2:
		out := make(object, 0, len(t))
		for _, f := range t {
			if f.key == "operating_reset_at" || (f.key == "operating" && p.opts.Shapes.TimeGeneration == 1) {
				continue
			}
			out = append(out, f)
		}
		return out
	case 3:
		t.set("start", now.Unix())
		t.set("processing", 0)
	}
	return t
}

const plainQueryLimit = "QUERY_LIMIT_EXCEEDED: Too many requests\n"
