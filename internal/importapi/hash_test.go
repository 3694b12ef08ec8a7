package importapi

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestContentHashIsTheHashOfTheCanonicalForm(t *testing.T) {
	tests := []struct {
		name, payload, canonical string
	}{
		{"key order and spaces", `{ "b": 1, "a": [true, null, "x"] }`, `{"a":[true,null,"x"],"b":1}`},
		{"numbers in shortest form", `{"n": [1.0, 1e2, 0.5, -0, 1e21, 1E-7, 100]}`, `{"n":[1,100,0.5,0,1e+21,1e-7,100]}`},
		{"no HTML escaping, minimal string escapes", `{"t": "<a href=\"x\">&amp;</a>\u00e9\u0001\n"}`, `{"t":"<a href=\"x\">&amp;</a>é\u0001\n"}`},
		{"keys sorted by UTF-16 code units", `{"é": 1, "z": 2, "A": 3, "😀": 4, "": 5}`, `{"":5,"A":3,"z":2,"é":1,"😀":4}`},
		{"nested objects", `{"o": {"y": {}, "x": []}}`, `{"o":{"x":[],"y":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ContentHash([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(tt.canonical))
			if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
				t.Errorf("ContentHash(%s) = %s, want the hash of %s", tt.payload, got, tt.canonical)
			}
		})
	}
	if _, err := ContentHash([]byte(`{"a": `)); err == nil {
		t.Error("a truncated payload hashed without error")
	}
}
