package graphfake

import (
	"bytes"
	"encoding/json"
)

// obj is a JSON object that keeps its keys in the order they were added, the way the Graph
// API answers in the order of the requested fields.
type obj []kv

type kv struct {
	k string
	v any
}

func (o *obj) add(k string, v any) { *o = append(*o, kv{k, v}) }

// MarshalJSON writes the keys in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
