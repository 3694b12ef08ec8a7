package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// decidePass weighs each rule in its turn: every case breaks one condition of a delta pass (or
// none), and the reason names it.
func TestDecidePass(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	portalStart := now.Add(-24 * time.Hour)
	lastFull := now.Add(-48 * time.Hour)
	limit := 30
	complete := func() Inventory {
		fp := "fp1"
		return Inventory{Pass: 3, Complete: true, LastFullAt: &lastFull, PortalStartedAt: &portalStart, Fingerprint: &fp}
	}
	tests := []struct {
		name   string
		cfg    func(*Config)
		inv    func(*Inventory)
		in     func(*passInput)
		kind   PassKind
		reason string // a part of the reason
	}{
		{name: "after a complete full pass", kind: PassDelta, reason: "reading what changed since 2026-03-09T12:00:00Z"},
		{name: "the lister has no modification filter", in: func(in *passInput) { in.NoDelta = "user.get has no modification filter" },
			kind: PassFull, reason: "user.get has no modification filter"},
		{name: "asked with --full", cfg: func(c *Config) { c.Full = true }, kind: PassFull, reason: "asked with --full"},
		{name: "this pass is limited", cfg: func(c *Config) { c.TestLimit = 10 }, kind: PassFull, reason: "limited to 10 records"},
		{name: "no pass yet", inv: func(i *Inventory) { *i = Inventory{} }, kind: PassFull, reason: "no complete full pass yet"},
		{name: "no full pass completed", inv: func(i *Inventory) { i.LastFullAt = nil }, kind: PassFull, reason: "no complete full pass yet"},
		{name: "the last pass was interrupted", inv: func(i *Inventory) { i.Complete = false }, kind: PassFull, reason: "did not complete"},
		{name: "the last pass was limited", inv: func(i *Inventory) { i.Limit = &limit }, kind: PassFull, reason: "limited to 30 records (test_limit)"},
		{name: "the portal's clock was not recorded", inv: func(i *Inventory) { i.PortalStartedAt = nil }, kind: PassFull, reason: "did not record the portal's clock"},
		{name: "no fingerprint recorded", inv: func(i *Inventory) { i.Fingerprint = nil }, kind: PassFull, reason: "what a pass reads changed"},
		{name: "the fingerprint changed", in: func(in *passInput) { in.Fingerprint = "fp2" }, kind: PassFull, reason: "what a pass reads changed"},
		{name: "the last full pass is too old", cfg: func(c *Config) { c.FullEvery = 24 * time.Hour }, kind: PassFull,
			reason: "the last full pass started 48h0m0s ago (a full pass is due every 24h0m0s)"},
		{name: "the portal's clock went back", in: func(in *passInput) { in.PortalNow = portalStart.Add(-time.Minute) }, kind: PassFull,
			reason: "is before the last pass's start"},
		{name: "the portal's clock is off this machine's", in: func(in *passInput) { in.PortalNow = now.Add(11 * time.Minute) }, kind: PassFull,
			reason: "11m0s off this machine's, beyond the 10m0s margin"},
		{name: "a skew within the margin", in: func(in *passInput) { in.PortalNow = now.Add(-9 * time.Minute) }, kind: PassDelta,
			reason: "reading what changed"},
		{name: "the portal's clock unknown", in: func(in *passInput) { in.PortalNow = time.Time{} }, kind: PassDelta, reason: "reading what changed"},
		// An answer asked ahead (prefetch.go) is compared with this machine's clock when it
		// arrived, not now: a rerun's later entities are not made full by the time it took.
		{name: "an answer asked ahead, an hour before", in: func(in *passInput) {
			in.PortalNow, in.AnsweredAt = now.Add(-time.Hour+time.Second), now.Add(-time.Hour)
		}, kind: PassDelta, reason: "reading what changed"},
		{name: "an answer asked ahead, off this machine's clock then", in: func(in *passInput) {
			in.PortalNow, in.AnsweredAt = now.Add(-time.Hour), now.Add(-time.Hour-11*time.Minute)
		}, kind: PassFull, reason: "11m0s off this machine's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Now: func() time.Time { return now }}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			in := passInput{Inv: complete(), Fingerprint: "fp1", PortalNow: now.Add(time.Second)}
			if tt.inv != nil {
				tt.inv(&in.Inv)
			}
			if tt.in != nil {
				tt.in(&in)
			}
			d := build(cfg).decidePass(in)
			if d.Kind != tt.kind || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("decidePass = %s (%q), want %s (%q)", d.Kind, d.Reason, tt.kind, tt.reason)
			}
			switch want := portalStart.Add(-DefaultSkewMargin); {
			case d.Delta() && !d.Since.Equal(want):
				t.Errorf("since = %s, want the last pass's portal start less the margin, %s", d.Since, want)
			case !d.Delta() && !d.Since.IsZero():
				t.Errorf("a full pass has since %s", d.Since)
			}
		})
	}
}

// An interrupted pass resumes as the kind it started as.
func TestResumedPass(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 9, 11, 50, 0, 0, time.UTC)
	why := "the last pass completed; reading what changed since ..."
	tests := []struct {
		name string
		inv  Inventory
		want PassDecision
	}{
		{"a delta pass", Inventory{Kind: PassDelta, Reason: &why, DeltaSince: &since}, PassDecision{Kind: PassDelta, Reason: why, Since: since}},
		{"a full pass", Inventory{Kind: PassFull, Reason: &why}, PassDecision{Kind: PassFull, Reason: why}},
		{"a pass begun before passes had kinds", Inventory{}, PassDecision{Kind: PassFull}},
		{"a delta pass without its since", Inventory{Kind: PassDelta, Reason: &why},
			PassDecision{Kind: PassFull, Reason: "the interrupted delta pass recorded no since"}},
	}
	for _, tt := range tests {
		if got := resumedPass(tt.inv); got != tt.want {
			t.Errorf("%s: resumedPass = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// The fingerprint moves with what a pass reads (method, parameters, custom fields selected) and
// not with the order the parameters were built in.
func TestIDScanFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(method string, params map[string]any) string {
		t.Helper()
		got, err := (&IDScan{Scan: rest.Scan{Method: method, Params: params}}).fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	base := fp("crm.item.list", map[string]any{"entityTypeId": 2, "select": []string{"*"}})
	if again := fp("crm.item.list", map[string]any{"select": []string{"*"}, "entityTypeId": 2}); again != base {
		t.Errorf("the same parameters give %s and %s", base, again)
	}
	for name, other := range map[string]string{
		"another method":       fp("crm.deal.list", map[string]any{"entityTypeId": 2, "select": []string{"*"}}),
		"another type":         fp("crm.item.list", map[string]any{"entityTypeId": 3, "select": []string{"*"}}),
		"a custom field named": fp("crm.item.list", map[string]any{"entityTypeId": 2, "select": []string{"*", "UF_CRM_1"}}),
	} {
		if other == base {
			t.Errorf("%s: the fingerprint did not change", name)
		}
	}
}

// The filter a delta pass adds is the field after since, in ISO 8601 with the portal's offset,
// added to the scan's own filter under the method's filter parameter.
func TestFilteredScan(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 9, 11, 50, 0, 0, time.UTC)
	msk := time.FixedZone("+03:00", 3*3600)
	ent := &Entity{Name: "tasks"}
	s := &IDScan{Scan: rest.Scan{Method: "tasks.task.list", FilterParam: "filter",
		Params: map[string]any{"select": []string{"ID"}, "filter": map[string]any{"REAL_STATUS": 2}}}}
	f := s.filtered(ent, "CHANGED_DATE", since, msk)
	filter := f.Scan.Params["filter"].(map[string]any)
	if got := filter[">CHANGED_DATE"]; got != "2026-03-09T14:50:00+03:00" {
		t.Errorf(">CHANGED_DATE = %v, want 2026-03-09T14:50:00+03:00", got)
	}
	if filter["REAL_STATUS"] != 2 || len(filter) != 2 {
		t.Errorf("filter = %v, want the scan's own condition kept", filter)
	}
	if _, changed := s.Scan.Params["filter"].(map[string]any)[">CHANGED_DATE"]; changed {
		t.Error("the scan's own parameters were changed")
	}
	if f.Scope != "tasks>CHANGED_DATE" || s.Scope != "" {
		t.Errorf("scopes = %q and %q, want tasks>CHANGED_DATE and the scan's own", f.Scope, s.Scope)
	}
	u := &IDScan{Scan: rest.UsersScan(map[string]any{"ADMIN_MODE": true})}
	if got := u.filtered(&Entity{Name: "users"}, "TIMESTAMP_X", since, nil).Scan.Params["FILTER"]; got == nil {
		t.Errorf("user.get's filter went elsewhere: %v", u.filtered(&Entity{Name: "users"}, "TIMESTAMP_X", since, nil).Scan.Params)
	}
}

// The portal's clock is read from date_start, with its offset, else from start.
func TestPortalClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 7, 23, 8, 45, 54, 0, time.UTC)
	tests := []struct {
		name string
		in   rest.Time
		want time.Time
	}{
		{"date_start", rest.Time{DateStart: "2024-07-23T10:45:54+02:00", Start: 1}, at},
		{"start", rest.Time{Start: float64(at.Unix())}, at},
		{"neither", rest.Time{}, time.Time{}},
	}
	for _, tt := range tests {
		if got := portalClock(tt.in); !got.Equal(tt.want) {
			t.Errorf("%s: portalClock = %s, want %s", tt.name, got, tt.want)
		}
	}
}
