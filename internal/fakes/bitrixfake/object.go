package bitrixfake

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// object is a JSON object that keeps its keys in order, so rows come out
// with their fields in the order the real portal sends them.
type object []field

type field struct {
	key   string
	value any
}

// MarshalJSON writes the fields in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
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
