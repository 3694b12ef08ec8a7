// Package rawjson splits JSON that is already known to be valid into its parts without decoding
// them: the elements of an array, the members of an object. It exists because a large answer is
// validated once when it arrives (json.Valid), and decoding every nested
// level again with encoding/json (which validates each input in full before decoding it) was
// most of the cost of reading a Bitrix24 listing. Given invalid JSON its results are undefined
// but it never panics; callers pass only bytes that passed json.Valid (or came out of a successful
// json.Unmarshal, or out of Postgres' json or jsonb columns).
package rawjson

import (
	"encoding/json"
	"errors"
)

// ErrKind is returned when the value is not of the kind asked for.
var ErrKind = errors.New("rawjson: not of the expected kind")

// Elements returns the elements of a JSON array, each with its surrounding space removed.
func Elements(b []byte) ([]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, ErrKind
	}
	var out []json.RawMessage
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for i < len(b) {
		end := valueEnd(b, i)
		out = append(out, json.RawMessage(b[i:end]))
		i = skipSpace(b, end)
		if i >= len(b) || b[i] == ']' {
			return out, nil
		}
		i = skipSpace(b, i+1) // the comma
	}
	return out, nil
}

// Members calls fn with every member of a JSON object in order: its key, decoded, and its value.
func Members(b []byte, fn func(key string, value json.RawMessage)) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrKind
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		kEnd := valueEnd(b, i)
		key, err := unquote(b[i:kEnd])
		if err != nil {
			return err
		}
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return ErrKind
		}
		i = skipSpace(b, i+1)
		vEnd := valueEnd(b, i)
		fn(key, json.RawMessage(b[i:vEnd]))
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return nil
}

// Object returns the members of a JSON object as a map; a key given twice keeps its last value,
// as encoding/json does.
func Object(b []byte) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	err := Members(b, func(k string, v json.RawMessage) { m[k] = v })
	if err != nil {
		return nil, err
	}
	return m, nil
}

// String returns the text of a JSON string; ErrKind when the value is not a string.
func String(b []byte) (string, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '"' {
		return "", ErrKind
	}
	return unquote(b[i:valueEnd(b, i)])
}

func unquote(q []byte) (string, error) {
	if len(q) < 2 || q[len(q)-1] != '"' {
		return "", ErrKind
	}
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c >= 0x80 {
			var s string
			err := json.Unmarshal(q, &s)
			return s, err
		}
	}
	return string(q[1 : len(q)-1]), nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(b)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = valueEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}
