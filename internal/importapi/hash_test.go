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

// TestContentHashOfTheDocumentsExample checks the worked example of docs/target-import-api.md,
// "Content hash": the canonical form and hash written out there by hand from the document's
// rules. targetfake's tests check the same literals against the fake's own code, so the client
// and the target agree through the document, not through shared code.
func TestContentHashOfTheDocumentsExample(t *testing.T) {
	const (
		payload   = `{"😀": "emoji", "t": "<a>\u00e9\u0001\n\/", "n": [1.0, 1e2, 123.456e1, 0.000001, 1E-7, 15e-8, -0, 1e21, 12345678901234567890], "\uff01": "fullwidth", "a": {"b": null, "A": true}}`
		canonical = `{"a":{"A":true,"b":null},"n":[1,100,1234.56,0.000001,1e-7,1.5e-7,0,1e+21,12345678901234567000],"t":"<a>é\u0001\n/","😀":"emoji","！":"fullwidth"}`
		hash      = "sha256:a2850d2e44fc5780cf37e51b5c20f4a281cb5dcbab0be7654bca16fd06498f26"
	)
	if sum := sha256.Sum256([]byte(canonical)); "sha256:"+hex.EncodeToString(sum[:]) != hash {
		t.Fatalf("the document's canonical form does not hash to its hash")
	}
	if got, err := ContentHash([]byte(payload)); err != nil || got != hash {
		t.Errorf("ContentHash(the document's example) = %s, %v; want %s", got, err, hash)
	}
}

func TestContentHashFollowsTheDocumentsEdgeCases(t *testing.T) {
	tests := []struct{ name, payload, canonical string }{
		{"names by UTF-16 units, not bytes", `{"\uff01":1,"😀":2}`, `{"😀":2,"！":1}`},
		{"numbers beyond 2^53 and at the exponent switch", `[12345678901234567890, 123456789012345678901, 0.0000001234, 1.25e-6, 5e-324]`,
			`[12345678901234567000,123456789012345680000,1.234e-7,0.00000125,5e-324]`},
		{"controls in lower-case hex, nothing else escaped", `["\u001F\u000b\u002f\u007f\u2028"]`, "[\"\\u001f\\u000b/\u007f\u2028\"]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ContentHash([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256([]byte(tt.canonical)); got != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Errorf("ContentHash(%s) is not the hash of %s", tt.payload, tt.canonical)
			}
		})
	}
}
