package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
)

// PHP's json_encode cannot tell an empty map from an empty list: an object with nothing in it
// arrives as [] (a get's whole result, "params", "mute_list", "SETTINGS"), and a list that
// lost its first keys arrives as an object. decodePHP decodes as encoding/json does and, only
// when that fails on such a mismatch, swaps [] for {} where the Go value is a struct or a map
// and {} for [] where it is a slice, then decodes again.

// decodePHP unmarshals raw into v, accepting PHP's empty array for an empty object and the
// other way round.
func decodePHP(raw []byte, v any) error {
	err := json.Unmarshal(raw, v)
	if _, mismatch := errors.AsType[*json.UnmarshalTypeError](err); !mismatch {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return err
	}
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return err
	}
	fixed, merr := json.Marshal(reshape(tree, t.Elem()))
	if merr != nil {
		return err
	}
	if err2 := json.Unmarshal(fixed, v); err2 != nil {
		return err // the first error says what the portal sent
	}
	return nil
}

// reshape walks a decoded JSON value along the Go type it is to be decoded into.
func reshape(v any, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch x := v.(type) {
	case []any:
		switch t.Kind() {
		case reflect.Struct, reflect.Map:
			if len(x) == 0 {
				return map[string]any{}
			}
		case reflect.Slice, reflect.Array:
			for i := range x {
				x[i] = reshape(x[i], t.Elem())
			}
		}
		return x
	case map[string]any:
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			if len(x) == 0 {
				return []any{}
			}
		case reflect.Map:
			for k, e := range x {
				x[k] = reshape(e, t.Elem())
			}
		case reflect.Struct:
			for k, e := range x {
				if f, ok := fieldFor(t, k); ok {
					x[k] = reshape(e, f.Type)
				}
			}
		}
		return x
	}
	return v
}

// fieldFor finds the struct field encoding/json would fill from the key: by tag, else by
// name, case-insensitively.
func fieldFor(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == "-" {
			continue
		} else if tag != "" {
			name = tag
		}
		if strings.EqualFold(name, key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
