package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"maps"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// decodedChecksum is how checksums were computed before they were written straight from the raw
// JSON: decode with UseNumber, drop the skipped fields, let encoding/json write it back. Every
// checksum already stored was made this way, so the two must agree on every payload.
func decodedChecksum(t testing.TB, payload []byte, skip []string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil || !json.Valid(payload) {
		return "", false
	}
	v = maps.Clone(v)
	for _, k := range skip {
		delete(v, k)
	}
	canon, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), true
}

func TestChecksumIsTheDecodedCanonicalForm(t *testing.T) {
	payloads := []string{
		`{"b":1,"a":"x"}`,
		`{ "ID" : "42", "NAME":"Иван", "N": 1.50, "E": 1e3, "NEG": -0, "T": true, "F": false, "Z": null }`,
		`{"ESC":"\u0418\u0432\u0430\u043d \/ \"q\" \t tab","HTML":"<b>&amp;</b>","LS":"a\u2028b","CTL":"\u0001"}`,
		`{"NESTED":{"z":[1,{"y":"2","x":[]}],"a":{}},"LIST":[" a ","\u00e9"],"EMPTY":""}`,
		`{"DUP":1,"DUP":2}`,
		`{"BAD":"\xff\xfe"}`,
		`{"UF_USR_LEVEL":[26,27],"PERSONAL_BIRTHDAY":"1990-01-01T03:00:00+03:00","IS_ONLINE":"Y"}`,
	}
	// Every row of the portal samples too.
	samples := fixtures.Bitrix()
	files, _ := fs.Glob(samples, "*.json")
	for _, f := range files {
		raw, err := fs.ReadFile(samples, f)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(raw, &env) != nil {
			continue
		}
		var rows []json.RawMessage
		if json.Unmarshal(env.Result, &rows) == nil {
			for _, r := range rows {
				payloads = append(payloads, string(r))
			}
		}
	}
	if len(payloads) < 20 {
		t.Fatalf("only %d payloads: the fixtures were not found", len(payloads))
	}
	for _, p := range payloads {
		for _, skip := range [][]string{nil, {"IS_ONLINE", "N"}} {
			want, ok := decodedChecksum(t, []byte(p), skip)
			if !ok {
				continue
			}
			got, err := checksum(json.RawMessage(p), skip)
			if err != nil || got != want {
				t.Errorf("checksum(%.120s, skip %v) = %s, %v; want %s", p, skip, got, err, want)
			}
		}
	}
}

func FuzzChecksumIsTheDecodedCanonicalForm(f *testing.F) {
	f.Add([]byte(`{"a":"\u003c","b":[1,2.0,{"c":null}]}`))
	f.Add([]byte(`{"x":"é\u2029","y":"\ud800"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		want, ok := decodedChecksum(t, payload, []string{"b"})
		if !ok {
			return
		}
		got, err := checksum(payload, []string{"b"})
		if err != nil || got != want {
			t.Errorf("checksum(%q) = %s, %v; want %s", payload, got, err, want)
		}
	})
}
