package targetfake

import (
	"strings"
	"testing"
)

// The worked example of docs/target-import-api.md, "Content hash": canonical form written out by
// hand from the document's rules, its SHA-256 taken with sha256sum. importapi's tests check the
// same literals against the client's ContentHash.
const (
	docPayload   = `{"😀": "emoji", "t": "<a>\u00e9\u0001\n\/", "n": [1.0, 1e2, 123.456e1, 0.000001, 1E-7, 15e-8, -0, 1e21, 12345678901234567890], "\uff01": "fullwidth", "a": {"b": null, "A": true}}`
	docCanonical = `{"a":{"A":true,"b":null},"n":[1,100,1234.56,0.000001,1e-7,1.5e-7,0,1e+21,12345678901234567000],"t":"<a>é\u0001\n/","😀":"emoji","！":"fullwidth"}`
	docHash      = "sha256:a2850d2e44fc5780cf37e51b5c20f4a281cb5dcbab0be7654bca16fd06498f26"
)

func TestContentHashOfTheDocumentsExample(t *testing.T) {
	canon, err := canonicalJSON([]byte(docPayload))
	if err != nil {
		t.Fatal(err)
	}
	if string(canon) != docCanonical {
		t.Errorf("canonical form\n got %s\nwant %s", canon, docCanonical)
	}
	if got, err := contentHash([]byte(docPayload)); err != nil || got != docHash {
		t.Errorf("contentHash = %s, %v; want %s", got, err, docHash)
	}
}

func TestCanonicalJSONFollowsTheDocument(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"whitespace and literals", " { \"x\" : [ true , false , null ] } ", `{"x":[true,false,null]}`},
		{"empty containers", `{"o":{},"a":[]}`, `{"a":[],"o":{}}`},
		{"integers below 1e21", `[1e20, 123456789012345678901, -5E+0]`, `[100000000000000000000,123456789012345680000,-5]`},
		{"fractions and small numbers", `[0.1, 1e-6, 1.25e-6, 1e-7, 0.0000001234, 5e-324]`, `[0.1,0.000001,0.00000125,1e-7,1.234e-7,5e-324]`},
		{"large numbers", `[1e21, 1.5e300, -2e22, 1.7976931348623157e308]`, `[1e+21,1.5e+300,-2e+22,1.7976931348623157e+308]`},
		{"short escapes", `["\b\t\n\f\r\"\\"]`, `["\b\t\n\f\r\"\\"]`},
		{"other controls in lower-case hex", `["\u0000\u001F\u000b"]`, `["\u0000\u001f\u000b"]`},
		{"nothing else escaped", `["\u002f\u003c\u003e\u0026\u007f\u2028\u00E9"]`, "[\"/<>&\u007f\u2028é\"]"},
		{"surrogate pair", `["\ud83d\ude00"]`, `["😀"]`},
		{"names by UTF-16 units", `{"\uff01":1,"😀":2,"é":3,"Z":4,"a":5,"":6}`, `{"":6,"Z":4,"a":5,"é":3,"😀":2,"！":1}`},
		{"names are escaped like strings", `{"a\nb":1}`, `{"a\nb":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := canonicalJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("canonicalJSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalJSONRefusesWhatIsNotIJSON(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"a":2}`, `{"o":{"b":1,"b":1}}`, `["\ud800"]`, `["\udc00\ud800"]`, `["\ud83dx"]`,
		`[1e400]`, `[-1e309]`, "[\"\xff\"]", "[\"a\x01\"]", `[01]`, `[1.]`, `[.5]`, `[1e]`, `{"a":1,}`, `[1,]`,
		`[tru]`, `{"a":1} x`, `"\x"`, `{"a" 1}`, ``,
	} {
		if got, err := canonicalJSON([]byte(in)); err == nil {
			t.Errorf("canonicalJSON(%q) = %s, want an error", in, got)
		}
	}
}

func TestBatchRefusesPayloadsWithoutAHashAndListShowsIt(t *testing.T) {
	_, c := start(t, Options{})
	for _, payload := range []string{`{"a":1,"a":2}`, `{"t":"\ud800"}`, `{"n":1e400}`} {
		a := c.batch("users", `{"key":"source:users:9","checksum":"c","payload":`+payload+`}`)
		if e := a.Results[0].Error; e == nil || e.Code != "validation_failed" || e.Retryable || !strings.Contains(e.Message, "I-JSON") {
			t.Errorf("payload %s: %+v, want validation_failed naming I-JSON", payload, a.Results[0])
		}
	}
	c.batch("users", `{"key":"source:users:1","checksum":"c","payload":`+docPayload+`}`)
	var page struct {
		Items []struct {
			Key         string `json:"key"`
			ContentHash string `json:"content_hash"`
		} `json:"items"`
	}
	if code := c.post("import.users.list", `{"cursor":""}`, &page); code != 200 || len(page.Items) != 1 {
		t.Fatalf("list: %d %+v", code, page)
	}
	if page.Items[0].ContentHash != docHash {
		t.Errorf("list content_hash = %s, want %s", page.Items[0].ContentHash, docHash)
	}
}
