package bitrixfake

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// refPattern is processBatchElement's regular expression with the keys of
// methodsBatch's $arResult filled in (result, next, total, time, error):
// "$" + section name + everything up to whitespace.
var (
	refPattern  = regexp.MustCompile(`(?i)\$(result|next|total|time|error)(\S*)`)
	pathPattern = regexp.MustCompile(`\[([^\]]+)\]`)
)

// batch is the batch method (SRV CRestProvider::methodsBatch): commands run
// in order, each with its references resolved against the answers so far;
// with halt the first error stops the batch; commands past 50 fail.
func (p *Portal) batch(params map[string]any, order []string, now time.Time) answer {
	haltValue, _ := param(params, "halt")
	halt := phpBool(haltValue)
	cmdValue, _ := param(params, "cmd")
	cmds, _ := cmdValue.(map[string]any)
	if list, ok := cmdValue.([]any); ok { // a JSON list: PHP keys 0, 1, 2...
		cmds = make(map[string]any, len(list))
		for i, c := range list {
			cmds[strconv.Itoa(i)] = c
		}
	}
	keys := commandKeys(cmds, order)
	answerKey := p.positions(keys)

	sections := map[string]map[string]any{}
	sectionKeys := map[string][]string{}
	put := func(section, key string, v any) {
		if sections[section] == nil {
			sections[section] = map[string]any{}
		}
		sections[section][key] = v
		sectionKeys[section] = append(sectionKeys[section], key)
	}
	// refs holds the answers by $arResult section, for references.
	refs := map[string]map[string]any{
		"result": {}, "next": {}, "total": {}, "time": {}, "error": {},
	}

	var cost time.Duration
	for i, key := range keys {
		call, isString := cmds[key].(string)
		if !isString && i < maxBatch {
			continue // the portal skips what is not a "method?query" string
		}
		var a answer
		if i >= maxBatch {
			a = fail(http.StatusBadRequest, "ERROR_BATCH_LENGTH_EXCEEDED", "Max batch length exceeded")
		} else {
			method, query, _ := strings.Cut(call, "?")
			method = strings.ToLower(strings.TrimSpace(method))
			cmdParams := resolveRefs(parseStr(query), refs).(map[string]any)
			if method == "batch" {
				a = fail(http.StatusMethodNotAllowed, "ERROR_BATCH_METHOD_NOT_ALLOWED", "Method is not allowed for batch usage")
			} else if f, due := p.commandFault(method); due {
				a = f
			} else {
				a = p.execute(method, cmdParams, now)
			}
		}
		cost += a.cost
		if a.code == "insufficient_scope" {
			a.description = "" // as in the docs' batch samples (batch.error.halt*.json)
		}
		// References use the keys as sent; the answer may key by position (Shapes.PositionKeys).
		if a.failed() {
			e := object{{"error", p.errorCodeValue(a.code)}, {"error_description", a.description}}
			put("error", answerKey[key], e)
			refs["error"][key] = e
			if halt {
				break
			}
			continue
		}
		put("result", answerKey[key], a.result)
		refs["result"][key] = a.result
		if total := p.shapedTotal(a); total != nil {
			put("total", answerKey[key], *total)
			refs["total"][key] = *total
		}
		if a.next != nil {
			put("next", answerKey[key], *a.next)
			refs["next"][key] = *a.next
		}
		t := p.timing(a, now)
		put("time", answerKey[key], t)
		refs["time"][key] = t
	}

	result := object{
		{"result", phpArray(sectionKeys["result"], sections["result"])},
		{"result_error", p.shapedErrors(sectionKeys["error"], sections["error"])},
		{"result_total", phpArray(sectionKeys["total"], sections["total"])},
		{"result_next", phpArray(sectionKeys["next"], sections["next"])},
		{"result_time", phpArray(sectionKeys["time"], sections["time"])},
	}
	return answer{result: result, cost: cost}
}

// commandKeys orders the commands as the request listed them; keys the
// order does not know come last, sorted.
func commandKeys(cmds map[string]any, order []string) []string {
	keys := make([]string, 0, len(cmds))
	seen := map[string]bool{}
	for _, k := range order {
		if _, ok := cmds[k]; ok && !seen[k] {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range cmds {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// resolveRefs is processBatchStructure: every string value is passed
// through resolveString.
func resolveRefs(v any, refs map[string]map[string]any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = resolveRefs(e, refs)
		}
		return out
	case string:
		return resolveString(t, refs)
	}
	return v
}

// resolveString is processBatchElement. Each reference's path is walked
// key by key and the walk stops at the first key that is missing. If the
// reference is the whole value, the value becomes whatever the walk
// reached, a list or an object included (so a reference past the end of a
// short page yields the page itself); inside a longer string, only a
// number or string replaces the text, and anything else leaves the
// reference text in place.
func resolveString(s string, refs map[string]map[string]any) any {
	var out any = s
	for _, m := range refPattern.FindAllStringSubmatch(s, -1) {
		path := pathPattern.FindAllStringSubmatch(m[2], -1)
		if len(path) == 0 {
			continue
		}
		var node any
		if section, ok := refs[m[1]]; ok { // PHP array keys are case-sensitive
			node = section
		}
		for _, p := range path {
			next, ok := index(node, p[1])
			if !ok {
				break
			}
			node = next
		}
		if m[0] == s {
			return toGeneric(node) // arrays arrive as PHP arrays, not as our rows
		}
		current, isString := out.(string)
		if !isString {
			continue
		}
		switch n := node.(type) {
		case string, int, float64:
			out = strings.ReplaceAll(current, m[0], strval(n))
		}
	}
	return out
}

// index is PHP's isset($node[$key]) followed by $node[$key], over the
// values answers are made of.
func index(node any, key string) (any, bool) {
	var v any
	i, err := strconv.Atoi(key)
	inRange := func(n int) bool { return err == nil && i >= 0 && i < n }
	switch t := node.(type) {
	case map[string]any:
		v = t[key]
	case object:
		v, _ = t.get(key)
	case []any:
		if inRange(len(t)) {
			v = t[i]
		}
	case []object:
		if inRange(len(t)) {
			v = t[i]
		}
	case []int:
		if inRange(len(t)) {
			v = t[i]
		}
	case []json.RawMessage:
		if inRange(len(t)) {
			var decoded any
			_ = json.Unmarshal(t[i], &decoded)
			v = decoded
		}
	}
	return v, v != nil
}
