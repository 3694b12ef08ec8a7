package pgtext

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

// jsonCases are documents as portals send them: PHP's json_encode writes a NUL as \u0000 and
// non-ASCII text as escapes (emoji as surrogate pairs), and passes invalid UTF-8 bytes through
// when asked to (JSON_INVALID_UTF8_IGNORE is not the default everywhere).
var jsonCases = []struct {
	name    string
	in      string
	want    string // "" when the input is returned as it is
	changes []Change
}{
	{name: "clean", in: `{"ID":"1","NAME":"Anna","X":[1,2,{"a":null}]}`},
	{name: "escapes kept", in: `{"NAME":"\u0410\u043d\u043d\u0430 \"q\" \\u0000 \/"}`},
	{name: "surrogate pair kept", in: `{"NAME":"\ud83d\ude00 smile"}`},
	{name: "raw UTF-8 kept", in: `{"NAME":"Анна 😀"}`},
	{name: "NUL escape", in: `{"ID":"7","NAME":"Ann\u0000a"}`, want: `{"ID":"7","NAME":"Anna"}`,
		changes: []Change{{Path: "$.NAME", NUL: 1}}},
	{name: "NUL escapes upper case", in: `{"A":"\U0000"}`, want: ""}, // not an escape JSON knows: left to the parser
	{name: "two NULs", in: `{"A":"\u0000x\u0000"}`, want: `{"A":"x"}`, changes: []Change{{Path: "$.A", NUL: 2}}},
	{name: "invalid UTF-8", in: "{\"A\":\"a\xffb\xc3\"}", want: "{\"A\":\"a\uFFFDb\uFFFD\"}",
		changes: []Change{{Path: "$.A", Invalid: 2}}},
	{name: "lone high surrogate", in: `{"A":"x\ud800y"}`, want: `{"A":"x\ufffdy"}`, changes: []Change{{Path: "$.A", Surrogates: 1}}},
	{name: "lone high surrogate at the end", in: `{"A":"\uD800"}`, want: `{"A":"\ufffd"}`, changes: []Change{{Path: "$.A", Surrogates: 1}}},
	{name: "high followed by non-low", in: `{"A":"\ud800\u0041"}`, want: `{"A":"\ufffd\u0041"}`, changes: []Change{{Path: "$.A", Surrogates: 1}}},
	{name: "lone low surrogate", in: `{"A":"\udc00"}`, want: `{"A":"\ufffd"}`, changes: []Change{{Path: "$.A", Surrogates: 1}}},
	{name: "nested paths", in: `{"data":[{"id":"1","caption":"ok"},{"id":"2","caption":"a\u0000"}],"paging":{"n":"\ud800"}}`,
		want:    `{"data":[{"id":"1","caption":"ok"},{"id":"2","caption":"a"}],"paging":{"n":"\ufffd"}}`,
		changes: []Change{{Path: "$.data[1].caption", NUL: 1}, {Path: "$.paging.n", Surrogates: 1}}},
	{name: "key", in: `{"a\u0000b":1,"c":"\u0000"}`, want: `{"ab":1,"c":""}`,
		changes: []Change{{Path: "$.ab", NUL: 1}, {Path: "$.c", NUL: 1}}},
	{name: "odd key", in: `{"a b":["x","\u0000"]}`, want: `{"a b":["x",""]}`, changes: []Change{{Path: `$["a b"][1]`, NUL: 1}}},
	{name: "whole document a string", in: `"\u0000"`, want: `""`, changes: []Change{{Path: "$", NUL: 1}}},
	{name: "space and arrays", in: " [ [ \"a\" , \"\\u0000\" ] , \"b\\udfff\" ] ", want: ` [ [ "a" , "" ] , "b\ufffd" ] `,
		changes: []Change{{Path: "$[0][1]", NUL: 1}, {Path: "$[1]", Surrogates: 1}}},
}

func TestJSON(t *testing.T) {
	for _, c := range jsonCases {
		t.Run(c.name, func(t *testing.T) {
			got, changes := JSON([]byte(c.in))
			want := c.want
			if want == "" {
				want = c.in
			}
			if string(got) != want {
				t.Errorf("JSON(%s) = %s, want %s", c.in, got, want)
			}
			if !reflect.DeepEqual(changes, c.changes) {
				t.Errorf("changes %+v, want %+v", changes, c.changes)
			}
		})
	}
}

// Clean input comes back as the very slice given: no copy on the common path.
func TestJSONCleanIsTheInput(t *testing.T) {
	in := []byte(`{"NAME":"\ud83d\ude00 Anna","X":"a\\u0000"}`)
	got, changes := JSON(in)
	if &got[0] != &in[0] || changes != nil {
		t.Errorf("clean input copied or reported: %+v", changes)
	}
}

// What the cleaned document decodes to is what the original decodes to (encoding/json turns
// invalid UTF-8 and lone surrogates into U+FFFD as well), less the NULs.
func TestJSONDecodesAsTheOriginal(t *testing.T) {
	for _, c := range jsonCases {
		var before, after any
		if err := json.Unmarshal([]byte(c.in), &before); err != nil {
			continue // not JSON encoding/json reads
		}
		out, _ := JSON([]byte(c.in))
		if err := json.Unmarshal(out, &after); err != nil {
			t.Errorf("%s: cleaned %s is not JSON: %v", c.name, out, err)
			continue
		}
		if want := stripNUL(before); !reflect.DeepEqual(after, want) {
			t.Errorf("%s: cleaned decodes to %#v, want %#v", c.name, after, want)
		}
	}
}

func stripNUL(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "\x00", "")
	case []any:
		for i := range x {
			x[i] = stripNUL(x[i])
		}
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[strings.ReplaceAll(k, "\x00", "")] = stripNUL(e)
		}
		return out
	}
	return v
}

func TestString(t *testing.T) {
	cases := []struct {
		in, want string
		change   Change
	}{
		{"plain", "plain", Change{}},
		{"Анна 😀", "Анна 😀", Change{}},
		{"a\x00b\x00", "ab", Change{NUL: 2}},
		{"a\xffb", "a\uFFFDb", Change{Invalid: 1}},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD", Change{Invalid: 3}}, // a surrogate encoded in UTF-8 is invalid UTF-8
		{"\x00\xc3", "\uFFFD", Change{NUL: 1, Invalid: 1}},
	}
	for _, c := range cases {
		got, change := String(c.in)
		if got != c.want || change != c.change {
			t.Errorf("String(%q) = %q, %+v; want %q, %+v", c.in, got, change, c.want, c.change)
		}
	}
	list := []string{"a", "b\x00"}
	out, sum := Strings(list)
	if !reflect.DeepEqual(out, []string{"a", "b"}) || list[1] != "b\x00" || sum != (Change{NUL: 1}) {
		t.Errorf("Strings = %q, %+v; the input %q", out, sum, list)
	}
}

func TestReplaced(t *testing.T) {
	c := Change{Path: "$.NAME", NUL: 1, Invalid: 2, Surrogates: 3}
	want := "$.NAME: 1 NUL removed, 2 invalid UTF-8 bytes replaced with U+FFFD, 3 lone surrogates replaced with U+FFFD"
	if c.String() != want {
		t.Errorf("%q, want %q", c.String(), want)
	}
	if got := (Change{Invalid: 1, Surrogates: 1}).Replaced(); got != "1 invalid UTF-8 byte replaced with U+FFFD, 1 lone surrogate replaced with U+FFFD" {
		t.Errorf("one of each: %q", got)
	}
}

// The point of it all: Postgres stores what comes out, as jsonb and as text, where it refused
// the input.
func TestPostgresStoresTheCleaned(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	for _, c := range jsonCases {
		if !json.Valid([]byte(strings.ToValidUTF8(c.in, "x"))) {
			continue
		}
		out, changes := JSON([]byte(c.in))
		var stored string
		if err := pool.QueryRow(ctx, `SELECT $1::text::jsonb::text`, string(out)).Scan(&stored); err != nil {
			t.Errorf("%s: %s not stored as jsonb: %v", c.name, out, err)
		}
		if len(changes) > 0 {
			if err := pool.QueryRow(ctx, `SELECT $1::text::jsonb::text`, c.in).Scan(&stored); err == nil {
				t.Errorf("%s: Postgres stores the input %s as it is: the case proves nothing", c.name, c.in)
			}
		}
	}
	for _, s := range []string{"a\x00b", "a\xffb", "\xed\xa0\x80"} {
		out, _ := String(s)
		var stored string
		if err := pool.QueryRow(ctx, `SELECT $1::text`, out).Scan(&stored); err != nil || stored != out {
			t.Errorf("%q not stored as text: %q, %v", out, stored, err)
		}
	}
}

// benchRecord is a users row as the portal sends it, about 1 KB, with escaped non-ASCII text as
// PHP writes it.
var benchRecord = []byte(`{"ID":"1042","XML_ID":"","ACTIVE":true,"NAME":"\u0410\u043d\u043d\u0430","LAST_NAME":"\u0418\u0432\u0430\u043d\u043e\u0432\u0430","SECOND_NAME":"","EMAIL":"anna.ivanova@example.com","LAST_LOGIN":"2024-05-14T09:12:33+03:00","DATE_REGISTER":"2021-03-01T00:00:00+03:00","TIME_ZONE":"Europe\/Moscow","IS_ONLINE":"N","TIME_ZONE_OFFSET":"10800","TIMESTAMP_X":"14.05.2024 09:12:33","LAST_ACTIVITY_DATE":"2024-05-14 09:40:02","PERSONAL_GENDER":"F","PERSONAL_PROFESSION":"","PERSONAL_WWW":"","PERSONAL_BIRTHDAY":"1990-07-12T00:00:00+03:00","PERSONAL_PHOTO":"https:\/\/cdn.example.com\/main\/a1b\/a1b2c3\/photo.jpg","PERSONAL_ICQ":"","PERSONAL_PHONE":"","PERSONAL_FAX":"","PERSONAL_MOBILE":"+7 900 000-00-00","PERSONAL_PAGER":"","PERSONAL_STREET":"","PERSONAL_CITY":"\u041c\u043e\u0441\u043a\u0432\u0430","PERSONAL_STATE":"","PERSONAL_ZIP":"","PERSONAL_COUNTRY":"0","PERSONAL_MAILBOX":"","PERSONAL_NOTES":"\ud83d\ude00","WORK_PHONE":"","WORK_COMPANY":"","WORK_POSITION":"Engineer","WORK_DEPARTMENT":"","WORK_WWW":"","WORK_FAX":"","WORK_PAGER":"","WORK_STREET":"","WORK_MAILBOX":"","WORK_CITY":"","WORK_ZIP":"","WORK_COUNTRY":"0","WORK_PROFILE":"","WORK_NOTES":"","UF_EMPLOYMENT_DATE":"","UF_DEPARTMENT":[1,7],"USER_TYPE":"employee"}`)

// BenchmarkJSONClean is the cost on every record the get stores (about 100,000 a second): the
// fast scan of a clean one.
func BenchmarkJSONClean(b *testing.B) {
	b.SetBytes(int64(len(benchRecord)))
	b.ReportAllocs()
	for b.Loop() {
		if _, changes := JSON(benchRecord); changes != nil {
			b.Fatal("changed")
		}
	}
}

// BenchmarkJSONDirty is the rare record that holds a NUL: a full rewrite with paths.
func BenchmarkJSONDirty(b *testing.B) {
	dirty := bytes.Replace(benchRecord, []byte(`"Engineer"`), []byte(`"Engi\u0000neer"`), 1)
	b.SetBytes(int64(len(dirty)))
	b.ReportAllocs()
	for b.Loop() {
		if _, changes := JSON(dirty); len(changes) != 1 {
			b.Fatal(changes)
		}
	}
}

func BenchmarkStringClean(b *testing.B) {
	s := strings.Repeat("Привет, мир. Hello, world. ", 40)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		String(s)
	}
}

// BenchmarkJSONCleanEscaped is a record of a Russian portal whose PHP escapes every letter:
// the scan's worst common case, an escape every six bytes.
func BenchmarkJSONCleanEscaped(b *testing.B) {
	text := strings.Repeat(`\u041f\u0440\u0438\u0432\u0435\u0442 `, 40)
	rec := []byte(`{"ID":"1","NAME":"` + text + `","NOTES":"` + text + `"}`)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, changes := JSON(rec); changes != nil {
			b.Fatal("changed")
		}
	}
}

// The fast scan says "clean" exactly when the full rewrite finds nothing to change, on strings
// built from the pieces that matter (escapes that are text, pairs, halves, runs of backslashes).
func TestFastScanAgreesWithRewrite(t *testing.T) {
	pieces := []string{`\u0000`, `\\u0000`, `\\\u0000`, `\ud800`, `\udc00`, `\uDBFF`, `\ud83d\ude00`, `\\ud800`, `\\`, `\"`,
		`a`, `é`, "\xff", "\xe2\x82", `\u0041`, `\u00e9`, `\u0d00`, `\uD83D\uDE00`, `\ud83d\\ude00`, ` `}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50000 {
		var b strings.Builder
		b.WriteString(`{"k":"`)
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteString(`"}`)
		doc := []byte(b.String())
		w := rewriter{in: doc}
		w.run()
		if fast, full := cleanJSON(doc), len(w.changes) == 0; fast != full {
			t.Fatalf("%s: the scan says clean=%v, the rewrite found %+v", doc, fast, w.changes)
		}
	}
}
