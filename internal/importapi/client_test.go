package importapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
)

// The client's tests run it against the fake target, which implements docs/target-import-api.md
// with code of its own (its content_hash included): where the two read the document differently,
// these tests fail.

func startTarget(t *testing.T, opts Options) (*targetfake.Server, *Client, string) {
	t.Helper()
	fake := targetfake.New(targetfake.Options{})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	raw := strings.Replace(srv.URL, "http://", "http://import:"+fake.Token()+"@", 1) + "/api/v1"
	c, err := New(raw, opts)
	if err != nil {
		t.Fatal(err)
	}
	return fake, c, fake.Token()
}

func items(payloads ...string) []Item {
	out := make([]Item, len(payloads))
	for i, p := range payloads {
		out[i] = Item{Key: fmt.Sprintf("source:users:%d", i+1), Checksum: "sha256:" + fmt.Sprint(len(p), i), Payload: json.RawMessage(p)}
	}
	return out
}

func TestClientImportsReadsAndListsWhatTheTargetHolds(t *testing.T) {
	ctx := context.Background()
	fake, c, token := startTarget(t, Options{})
	if strings.Contains(c.Address(), token) || !strings.HasSuffix(c.Address(), "/api/v1/") {
		t.Errorf("Address() = %q: want the base without the token, ending in /", c.Address())
	}
	sent := items(`{"NAME": "Анна", "n": 1.0}`, `{"NAME":"Иван","tags":["b","a"]}`, `{"x":{"b":1,"a":2}}`, `{}`, `{"s":"<&>"}`)
	res, err := c.Import(ctx, "users", sent)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != "created" || r.TargetID == "" || r.Key != sent[i].Key {
			t.Errorf("result %d = %+v, want created", i, r)
		}
	}
	sent[1].Payload, sent[1].Checksum = json.RawMessage(`{"NAME":"Иван Петров"}`), "sha256:changed"
	again, err := c.Import(ctx, "users", sent[:2])
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Status != "unchanged" || again[1].Status != "updated" || again[0].TargetID != res[0].TargetID || again[1].TargetID != res[1].TargetID {
		t.Errorf("resend = %+v, want unchanged and updated under the same target ids as %+v", again, res[:2])
	}

	if n, err := c.Count(ctx, "users"); err != nil || n != 5 {
		t.Errorf("Count = %d, %v; want 5", n, err)
	}
	recs, missing, err := c.GetByKeys(ctx, "users", []string{"source:users:2", "source:users:9"})
	if err != nil || len(recs) != 1 || recs[0].TargetID != res[1].TargetID || recs[0].Checksum != "sha256:changed" ||
		!slices.Equal(missing, []string{"source:users:9"}) {
		t.Errorf("GetByKeys = %+v, %v, %v", recs, missing, err)
	}

	// Every page of two, in byte order, each hash the client's ContentHash of what it sent.
	want := map[string]string{}
	for _, it := range sent {
		h, err := ContentHash(it.Payload)
		if err != nil {
			t.Fatal(err)
		}
		want[it.Key] = h
	}
	var keys []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := c.List(ctx, "users", cursor, 2)
		if err != nil || len(page) > 2 || pages > 5 {
			t.Fatalf("List after %q: %d items, %v", cursor, len(page), err)
		}
		for _, it := range page {
			keys = append(keys, it.Key)
			if it.ContentHash != want[it.Key] {
				t.Errorf("%s: the target's content_hash %s, the client's %s", it.Key, it.ContentHash, want[it.Key])
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.IsSorted(keys) || len(keys) != 5 {
		t.Errorf("listed keys %v, want the 5 in byte order", keys)
	}

	if err := fake.Corrupt("users", "source:users:3", "x", map[string]int{"a": 2, "b": 3}); err != nil {
		t.Fatal(err)
	}
	page, _, err := c.List(ctx, "users", "source:users:2", 1)
	if err != nil || len(page) != 1 || page[0].Key != "source:users:3" || page[0].ContentHash == want["source:users:3"] {
		t.Errorf("a record changed on the target lists with the same hash: %+v, %v", page, err)
	}
}

func TestClientFieldsAndItemErrors(t *testing.T) {
	ctx := context.Background()
	fake, c, _ := startTarget(t, Options{})
	level := Field{Name: "UF_USR_LEVEL", Type: "enumeration", Multiple: true, Options: []Option{{Value: "Junior", Sort: 100, XMLID: "a1"}}}
	added, err := c.AddFields(ctx, "users", []Field{level, {Name: "UF_USR_LEVEL", Type: "enumeration"}})
	if err != nil || added[0].Status != "created" || added[1].Status != "exists" {
		t.Fatalf("AddFields = %+v, %v", added, err)
	}
	fields, err := c.Fields(ctx, "users")
	if err != nil || len(fields) != 1 || len(fields[0].Options) != 1 || fields[0].Options[0].ID == "" {
		t.Fatalf("Fields = %+v, %v: want the option with the target's id", fields, err)
	}
	id := fields[0].Options[0].ID

	fake.FailItems("users", 1)
	fake.RejectKey("users", "source:users:3", "no such department")
	res, err := c.Import(ctx, "users", items(`{"UF_USR_LEVEL":["`+id+`"]}`, `{"UF_USR_LEVEL":["999999"]}`, `{"a":1}`, `{"a":1,"a":2}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		code      string
		retryable bool
	}{{"temporarily_unavailable", true}, {"validation_failed", false}, {"rejected", false}, {"validation_failed", false}}
	for i, w := range want {
		if e := res[i].Error; e == nil || e.Code != w.code || e.Retryable != w.retryable {
			t.Errorf("item %d: %+v, want %s (retryable %v)", i, res[i], w.code, w.retryable)
		}
	}
	res, err = c.Import(ctx, "users", items(`{"UF_USR_LEVEL":["`+id+`"]}`))
	if err != nil || res[0].Status != "created" {
		t.Errorf("the retryable item sent again: %+v, %v", res, err)
	}
}

func TestClientRequestErrors(t *testing.T) {
	ctx := context.Background()
	var waits []time.Duration
	// No fault here holds an answer: the timeout only ends a hang, never a slow machine's call.
	fake, c, token := startTarget(t, Options{Timeout: time.Minute, Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	one := items(`{"a":1}`)

	fake.FailNext("import.users.batch", targetfake.FaultRateLimited, 2)
	if res, err := c.Import(ctx, "users", one); err != nil || res[0].Status != "created" || !slices.Equal(waits, []time.Duration{time.Second, time.Second}) {
		t.Errorf("after two 429s: %+v, %v, waits %v; want created after two 1 s waits", res, err, waits)
	}
	for _, tt := range []struct {
		fault      targetfake.Fault
		httpStatus int
	}{{targetfake.FaultServerError, 503}, {targetfake.FaultDrop, 0}, {targetfake.FaultLostAnswer, 0}} {
		fake.FailNext("", tt.fault, 1)
		_, err := c.Count(ctx, "users")
		te, ok := errors.AsType[*Error](err)
		if !ok || te.HTTPStatus != tt.httpStatus || !IsRetryable(err) {
			t.Errorf("fault %d: %v, want a retryable *Error with HTTP %d", tt.fault, err, tt.httpStatus)
		}
	}

	bad, err := New(strings.Replace(c.Address(), "http://", "http://import:wrong0token@", 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Count(ctx, "users")
	if te, ok := errors.AsType[*Error](err); !ok || te.HTTPStatus != 401 || te.Code != "unauthorized" || IsRetryable(err) {
		t.Errorf("wrong token: %v, want a final 401 unauthorized", err)
	}
	if _, _, err := c.GetByKeys(ctx, "users", nil); err == nil {
		t.Error("GetByKeys without keys was sent")
	}
	for _, raw := range []string{"https://target.example/api/", "ftp://import:" + token + "@target.example/", "https://import:" + token + "@target.example/api/?x=1"} {
		if _, err := New(raw, Options{}); err == nil || strings.Contains(err.Error(), token) {
			t.Errorf("New(%q) = %v: want an error that does not show the token", strings.ReplaceAll(raw, token, "TOKEN"), err)
		}
	}
}
