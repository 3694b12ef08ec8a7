package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/ingest-dev/ingest/internal/rawjson"
)

// checksum returns the sha256 (hex) of a payload's canonical form: keys sorted, numbers as sent,
// no insignificant space, and the fields in skip left out. Field order and formatting of the
// portal's answer do not change it; a changed value does.
func checksum(payload json.RawMessage, skip []string) (string, error) {
	fields, err := FieldsOf(payload)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	return fieldsChecksum(fields, skip)
}

// fieldsChecksum is checksum over a payload already split into its fields. The canonical form
// is what encoding/json writes for the payload decoded with UseNumber (sorted keys, strings
// re-escaped the way it escapes them), so checksums stored by earlier versions stay valid; it
// is written straight from the raw JSON instead of through decoded values, which on a large get
// was the most expensive step of storing a page.
func fieldsChecksum(fields map[string]json.RawMessage, skip []string) (string, error) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if !slices.Contains(skip, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	buf := make([]byte, 0, 2048)
	buf = append(buf, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCanonicalString(buf, k)
		buf = append(buf, ':')
		if buf, err = appendCanonical(buf, fields[k]); err != nil {
			return "", fmt.Errorf("checksum: field %s: %w", k, err)
		}
	}
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), nil
}

// appendCanonical appends the canonical form of one JSON value (see fieldsChecksum).
func appendCanonical(buf []byte, raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("empty value")
	}
	switch raw[0] {
	case '{':
		m, err := rawjson.Object(raw)
		if err != nil {
			return nil, err
		}
		buf = append(buf, '{')
		for i, k := range slices.Sorted(maps.Keys(m)) {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonicalString(buf, k)
			buf = append(buf, ':')
			if buf, err = appendCanonical(buf, m[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case '[':
		list, err := rawjson.Elements(raw)
		if err != nil {
			return nil, err
		}
		buf = append(buf, '[')
		for i, v := range list {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendCanonical(buf, v); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case '"':
		if plainString(raw) {
			return append(buf, raw...), nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return appendCanonicalString(buf, s), nil
	}
	// A number (kept as sent, as json.Number is), true, false or null.
	return append(buf, raw...), nil
}

// plainString reports whether a JSON string token is already in the form encoding/json writes:
// no escapes, and nothing it would escape (control characters, <, >, &, U+2028, U+2029, invalid
// UTF-8).
func plainString(raw []byte) bool {
	for _, r := range string(raw[1 : len(raw)-1]) { // ranging over a conversion does not copy
		if !plainRune(r) {
			return false
		}
	}
	return true
}

// plainText reports whether s, quoted, is a string as encoding/json writes it (plainString).
func plainText(s string) bool {
	for _, r := range s {
		if !plainRune(r) {
			return false
		}
	}
	return true
}

func plainRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 0x20 && r != '\\' && r != '"' && r != '<' && r != '>' && r != '&'
	}
	return r != utf8.RuneError && r != '\u2028' && r != '\u2029'
}

// appendCanonicalString appends s as encoding/json writes a string.
func appendCanonicalString(buf []byte, s string) []byte {
	if plainText(s) {
		buf = append(buf, '"')
		buf = append(buf, s...)
		return append(buf, '"')
	}
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}

// FieldsOf splits a JSON object into its fields. Payloads come out of a decoded answer of the
// portal or out of a jsonb column, both valid JSON, so it splits them without validating again.
func FieldsOf(payload json.RawMessage) (map[string]json.RawMessage, error) {
	m, err := rawjson.Object(payload)
	if err != nil {
		return nil, fmt.Errorf("decode row: want an object, got %.200s", payload)
	}
	return m, nil
}

// Text reads a field that holds a string or a number (Bitrix sends ids both ways) as text;
// empty for null or a missing field.
func Text(fields map[string]json.RawMessage, name string) string {
	raw := bytes.TrimSpace(fields[name])
	if len(raw) == 0 {
		return ""
	}
	// Fields come out of a validated answer or a json column: a value starting with a quote is a
	// string, one starting with a digit or a minus sign a number.
	switch c := raw[0]; {
	case c == '"':
		s, _ := rawjson.String(raw)
		return s
	case c == '-' || c >= '0' && c <= '9':
		return string(raw)
	}
	return ""
}

// SortedKeys returns the map's keys in order, so that what is built from a map (a log line, a
// list of fields) comes out the same on every run.
func SortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
