package rawjson

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// The splitters must agree with encoding/json on every valid input.
func check(t *testing.T, b []byte) {
	if !json.Valid(b) {
		return
	}
	var list []json.RawMessage
	if json.Unmarshal(b, &list) == nil {
		got, err := Elements(b)
		if err != nil || len(got) != len(list) {
			t.Fatalf("Elements(%q) = %d elements, %v; want %d", b, len(got), err, len(list))
		}
		for i := range list {
			if !bytes.Equal(bytes.TrimSpace(list[i]), got[i]) {
				t.Fatalf("Elements(%q)[%d] = %q, want %q", b, i, got[i], list[i])
			}
		}
	} else if _, err := Elements(b); err == nil {
		t.Fatalf("Elements(%q) of a non-array: no error", b)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) == nil && obj != nil {
		got, err := Object(b)
		if err != nil || !maps.EqualFunc(got, obj, func(a, b json.RawMessage) bool { return bytes.Equal(a, bytes.TrimSpace(b)) }) {
			t.Fatalf("Object(%q) = %q, %v; want %q", b, got, err, obj)
		}
	} else if _, err := Object(b); err == nil && !bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		t.Fatalf("Object(%q) of a non-object: no error", b)
	}
	var str string
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && trimmed[0] == '"' && json.Unmarshal(b, &str) == nil {
		if got, err := String(b); err != nil || got != str {
			t.Fatalf("String(%q) = %q, %v; want %q", b, got, err, str)
		}
	} else if _, err := String(b); err == nil {
		t.Fatalf("String(%q) of a non-string: no error", b)
	}
}

func TestSplit(t *testing.T) {
	for _, s := range []string{
		`[]`, ` [ ] `, `[1, "a,]", {"b":[1,{"c":"}"}]}, null, true, -1.5e3]`,
		`{}`, `{"a":1,"b":"x\"y","a":2, "\u0418":[{"k":"]"}], "é": {} }`,
		`"str"`, ` "a\"b\u0418\\" `, `"И\n"`, `12`, `[[],[[]],{"":""}]`, "{\n\t\"a\" :\r\n 1 }",
	} {
		check(t, []byte(s))
	}
	if keys := slices.Collect(maps.Keys(must(Object([]byte(`{"\u0418":1}`))))); keys[0] != "И" {
		t.Errorf("escaped key read as %q", keys[0])
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte(`[1,{"a":"\\\"]"},[]]`))
	f.Add([]byte(`{"a":{"b":[1,2]},"c":"d"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Elements(b) // never panics on anything
		_, _ = Object(b)
		check(t, b)
	})
}
