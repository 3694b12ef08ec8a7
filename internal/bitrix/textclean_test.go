package bitrix_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// Users whose text holds what Postgres cannot store, written as the portal's PHP writes it (a
// NUL as \u0000, bytes that are not UTF-8 raw, a lone surrogate escape): the run (get, set,
// verify) succeeds with every user stored and imported, the text cleaned the same on both sides
// (NUL removed, the rest U+FFFD), each affected user named in the log and counted; a second get
// finds nothing changed, and the groups migrate after.
func TestRunStoresUsersWithTextPostgresCannotStore(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 120, Groups: 5, Seed: 31})
	ids := v.portal.UserIDs()
	dirty := map[string]struct {
		field, text, want string
	}{
		strconv.Itoa(ids[3]):   {"NAME", "Bo\x00b", "Bob"},
		strconv.Itoa(ids[60]):  {"WORK_POSITION", "Инженер \xff\xfe", "Инженер \uFFFD\uFFFD"},
		strconv.Itoa(ids[100]): {"LAST_NAME", "Smith \xed\xa0\x80 😀", "Smith \uFFFD 😀"},
	}
	for id, d := range dirty {
		n, _ := strconv.Atoi(id)
		v.portal.SetUserField(n, d.field, bitrixfake.PHPText(d.text))
	}
	e := v.engine()
	if err := e.Run(v.ctx, bitrix.Users); err != nil {
		t.Fatalf("run users: %v", err)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND status = $1`, string(engine.ImportOK)); n != 120 {
		t.Errorf("%d users IMPORT_OK, want 120", n)
	}
	if !v.inventory(bitrix.Users).Verified {
		t.Error("users not verified")
	}
	log := v.log.String()
	for id, d := range dirty {
		var stored map[string]any
		if err := json.Unmarshal(v.record(bitrix.Users, id).Payload, &stored); err != nil {
			t.Fatal(err)
		}
		if stored[d.field] != d.want {
			t.Errorf("user %s: stored %s = %q, want %q", id, d.field, stored[d.field], d.want)
		}
		rec, ok := v.target.Lookup(bitrix.Users, "source:users:"+id)
		if !ok {
			t.Errorf("user %s not on the target", id)
			continue
		}
		var onTarget map[string]any
		if err := json.Unmarshal(rec.Payload, &onTarget); err != nil || !containsValue(onTarget, d.want) {
			t.Errorf("user %s on the target: %s; want %q in it", id, rec.Payload, d.want)
		}
		if !logLineWith(log, "text Postgres cannot store", "source_id="+id, "$."+d.field) {
			t.Errorf("no warn line naming user %s and $.%s:\n%s", id, d.field, log)
		}
	}
	if got := v.metric(`records_text_cleaned_total{entity=users}`); got != 3 {
		t.Errorf("records_text_cleaned_total{entity=users} = %v, want 3", got)
	}

	st, err := e.Get(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Of(bitrix.Users); c.Unchanged != 120 || c.Changed != 0 {
		t.Errorf("second get: %+v; want 120 unchanged", c)
	}
	if err := e.Run(v.ctx, bitrix.Groups); err != nil {
		t.Errorf("run groups after: %v", err)
	}
}

// containsValue reports whether a decoded JSON value holds the string s anywhere.
func containsValue(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		for _, e := range x {
			if containsValue(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if containsValue(e, s) {
				return true
			}
		}
	}
	return false
}

// logLineWith reports whether one line of the log holds every one of parts.
func logLineWith(log string, parts ...string) bool {
	for line := range strings.Lines(log) {
		all := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
