package bitrixfake

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// object is a JSON object that keeps its keys in order, so rows come out
// with their fields in the order the real portal sends them.
type object []field

type field struct {
	key   string
	value any
}

// MarshalJSON writes the fields in order.
func (o object) MarshalJSON() ([]byte, error) { return appendJSON(nil, o) }

// appendJSON encodes v onto b. It handles the types the portal's answers
// are made of directly: going through encoding/json would re-validate and
// re-compact every nested object's output, which for a 50-page batch is
// most of the portal's work.
func appendJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, t), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case int:
		return strconv.AppendInt(b, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(b, t, 10), nil
	case float64:
		return strconv.AppendFloat(b, t, 'f', -1, 64), nil
	case json.RawMessage:
		return append(b, t...), nil
	case object:
		b = append(b, '{')
		for i, f := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f.key)
			b = append(b, ':')
			if b, err = appendJSON(b, f.value); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []object:
		return appendList(b, len(t), func(b []byte, i int) ([]byte, error) { return appendJSON(b, t[i]) })
	case []any:
		return appendList(b, len(t), func(b []byte, i int) ([]byte, error) { return appendJSON(b, t[i]) })
	case []int:
		return appendList(b, len(t), func(b []byte, i int) ([]byte, error) { return strconv.AppendInt(b, int64(t[i]), 10), nil })
	case []json.RawMessage:
		return appendList(b, len(t), func(b []byte, i int) ([]byte, error) { return append(b, t[i]...), nil })
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

func appendList(b []byte, n int, elem func([]byte, int) ([]byte, error)) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = elem(b, i); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

func (o object) get(key string) (any, bool) {
	for _, f := range o {
		if f.key == key {
			return f.value, true
		}
	}
	return nil, false
}

// set replaces a field's value, or appends the field.
func (o *object) set(key string, value any) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = value
			return
		}
	}
	*o = append(*o, field{key, value})
}

// phpArray renders values keyed in the given order the way PHP's
// json_encode renders an array: a JSON list when the keys are exactly
// 0, 1, 2..., an object otherwise, and [] when empty.
func phpArray(keys []string, values map[string]any) any {
	if len(keys) == 0 {
		return []any{}
	}
	list := true
	for i, k := range keys {
		if k != strconv.Itoa(i) {
			list = false
			break
		}
	}
	if list {
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = values[k]
		}
		return out
	}
	out := make(object, 0, len(keys))
	for _, k := range keys {
		if v, ok := values[k]; ok {
			out = append(out, field{k, v})
		}
	}
	if len(out) == 0 {
		return []any{}
	}
	return out
}
