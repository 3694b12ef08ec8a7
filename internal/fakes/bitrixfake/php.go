package bitrixfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// The portal is PHP: parameters arrive as nested arrays whose leaves are
// strings (from a query string or form) or JSON scalars (from a JSON body),
// and handlers coerce them with PHP's loose rules. The helpers here
// reproduce the rules the handlers below depend on. Parameter maps are
// map[string]any with string, json.Number, bool, nil, []any and
// map[string]any values.

// parseStr decodes a query string like PHP's parse_str: "a[b][]=1&a[b][]=2"
// gives {"a": {"b": {"0": "1", "1": "2"}}}.
func parseStr(query string) map[string]any {
	out := map[string]any{}
	for _, pair := range strings.Split(query, "&") {
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			continue
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			continue
		}
		setPath(out, splitKey(key), value)
	}
	return out
}

// splitKey splits "a[b][]" into ["a", "b", ""].
func splitKey(key string) []string {
	base, rest, found := strings.Cut(key, "[")
	if !found || base == "" {
		return []string{key}
	}
	parts := []string{base}
	rest = "[" + rest
	for strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			break // PHP ignores the malformed tail
		}
		parts = append(parts, rest[1:end])
		rest = rest[end+1:]
	}
	return parts
}

func setPath(m map[string]any, path []string, value string) {
	key := path[0]
	if key == "" {
		key = strconv.Itoa(nextIndex(m))
	}
	if len(path) == 1 {
		m[key] = value
		return
	}
	child, ok := m[key].(map[string]any)
	if !ok {
		child = map[string]any{}
		m[key] = child
	}
	setPath(child, path[1:], value)
}

// nextIndex is PHP's next integer key for $a[] = ...: one past the largest.
func nextIndex(m map[string]any) int {
	next := 0
	for k := range m {
		if n, err := strconv.Atoi(k); err == nil && n >= next {
			next = n + 1
		}
	}
	return next
}

// decodeJSONParams decodes a JSON request body. The portal turns an
// unparsable body into an empty parameter set instead of failing.
func decodeJSONParams(body []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return map[string]any{}
	}
	switch t := v.(type) {
	case map[string]any:
		return t
	case []any: // positional parameters: keys 0, 1, 2...
		m := make(map[string]any, len(t))
		for i, e := range t {
			m[strconv.Itoa(i)] = e
		}
		return m
	}
	return map[string]any{}
}

// jsonObjectKeys returns the keys of the object at the given top-level
// key of a JSON body, in document order.
func jsonObjectKeys(body []byte, key string) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if k, _ := tok.(string); !strings.EqualFold(k, key) {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return nil
		}
		return objectKeys(raw)
	}
	return nil
}

func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	var keys []string
	if tok == json.Delim('[') { // a JSON list of commands has keys 0, 1, 2...
		for i := 0; dec.More(); i++ {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			keys = append(keys, strconv.Itoa(i))
		}
		return keys
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		keys = append(keys, fmt.Sprint(tok))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	return keys
}

// formKeys returns the keys of "prefix[...]" pairs of a query string in
// the order they appear.
func formKeys(query, prefix string) []string {
	var keys []string
	seen := map[string]bool{}
	for _, pair := range strings.Split(query, "&") {
		rawKey, _, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			continue
		}
		parts := splitKey(key)
		if len(parts) < 2 || !strings.EqualFold(parts[0], prefix) || seen[parts[1]] {
			continue
		}
		seen[parts[1]] = true
		keys = append(keys, parts[1])
	}
	return keys
}

// param looks a parameter up by name, ignoring case as the handlers do
// after array_change_key_case.
func param(params map[string]any, name string) (any, bool) {
	if v, ok := params[name]; ok {
		return v, true
	}
	for k, v := range params {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// intval is PHP's intval: leading digits of a string, 1 for a non-empty
// array, 0 for anything else that is not a number.
func intval(v any) int {
	switch t := v.(type) {
	case nil:
		return 0
	case bool:
		if t {
			return 1
		}
		return 0
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return int(n)
		}
		f, _ := t.Float64()
		return int(f)
	case int:
		return t
	case float64:
		return int(t)
	case string:
		s := strings.TrimSpace(t)
		end := 0
		for end < len(s) && (s[end] >= '0' && s[end] <= '9' || end == 0 && (s[0] == '-' || s[0] == '+')) {
			end++
		}
		n, _ := strconv.Atoi(s[:end])
		return n
	case map[string]any:
		if len(t) > 0 {
			return 1
		}
	case []any:
		if len(t) > 0 {
			return 1
		}
	}
	return 0
}

// phpBool is PHP's (bool) cast: "", "0", 0, null and empty arrays are
// false, everything else true ("false" included).
func phpBool(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case string:
		return t != "" && t != "0"
	case json.Number:
		f, _ := t.Float64()
		return f != 0
	case float64:
		return t != 0
	case map[string]any:
		return len(t) > 0
	case []any:
		return len(t) > 0
	}
	return true
}

// strval renders a scalar as PHP would put it into a string.
func strval(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case bool:
		if t {
			return "1"
		}
		return ""
	case string:
		return t
	case json.Number:
		return t.String()
	case int:
		return strconv.Itoa(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	}
	return "Array"
}

// listOf returns the values of a PHP list: a JSON list, or a map with keys
// 0, 1, 2... in key order; a scalar is a one-element list.
func listOf(v any) []any {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		return t
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, errA := strconv.Atoi(keys[i])
			b, errB := strconv.Atoi(keys[j])
			if errA == nil && errB == nil {
				return a < b
			}
			return keys[i] < keys[j]
		})
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = t[k]
		}
		return out
	}
	return []any{v}
}

// readAllLimited reads a request body up to a sane size.
func readAllLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, 32<<20))
}
