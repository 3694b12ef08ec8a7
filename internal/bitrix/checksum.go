package bitrix

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// checksum returns the sha256 (hex) of a payload's canonical form: keys sorted, numbers as sent,
// no insignificant space, and the fields in skip left out. Field order and formatting of the
// portal's answer do not change it; a changed value does.
func checksum(payload json.RawMessage, skip []string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("checksum: decode payload: %w", err)
	}
	if obj, ok := v.(map[string]any); ok && len(skip) > 0 {
		obj = maps.Clone(obj)
		for _, k := range skip {
			delete(obj, k)
		}
		v = obj
	}
	// encoding/json writes map keys sorted, which is the canonical order.
	canon, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("checksum: encode payload: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// fieldsOf splits a JSON object into its fields.
func fieldsOf(payload json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("decode row: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("decode row: want an object, got %s", payload)
	}
	return m, nil
}

// text reads a field that holds a string or a number (Bitrix sends ids both ways) as text;
// empty for null or a missing field.
func text(fields map[string]json.RawMessage, name string) string {
	raw := bytes.TrimSpace(fields[name])
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
