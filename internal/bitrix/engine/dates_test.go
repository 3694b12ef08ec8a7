package engine_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

func TestParseDate(t *testing.T) {
	t.Parallel()
	moscow := time.FixedZone("MSK", 3*60*60)
	tests := []struct {
		name    string
		raw     string
		ok      bool
		utc     string // RFC 3339
		offset  string
		assumed bool
		bad     bool
	}{
		// research/bitrix.md §5: PHP date('c') in the portal's zone.
		{name: "ISO with offset", raw: `"2026-03-19T15:01:27+02:00"`, ok: true, utc: "2026-03-19T13:01:27Z", offset: "+02:00"},
		{name: "ISO UTC", raw: `"2024-07-25T13:06:54+00:00"`, ok: true, utc: "2024-07-25T13:06:54Z", offset: "+00:00"},
		{name: "ISO Z", raw: `"2024-07-25T13:06:54Z"`, ok: true, utc: "2024-07-25T13:06:54Z", offset: "+00:00"},
		{name: "ISO negative offset", raw: `"2024-01-01T20:00:00-05:00"`, ok: true, utc: "2024-01-02T01:00:00Z", offset: "-05:00"},
		{name: "ISO offset without colon", raw: `"2024-01-01T20:00:00+0530"`, ok: true, utc: "2024-01-01T14:30:00Z", offset: "+05:30"},
		// user.get TIMESTAMP_X / LAST_ACTIVITY_DATE in the batch.json sample: no offset.
		{name: "portal display format", raw: `"24.08.2023 13:19:39"`, ok: true, utc: "2023-08-24T10:19:39Z", offset: "+03:00", assumed: true},
		{name: "SQL-like format", raw: `"2024-08-29 10:30:11"`, ok: true, utc: "2024-08-29T07:30:11Z", offset: "+03:00", assumed: true},
		{name: "bare date", raw: `"2018-07-14"`, ok: true, utc: "2018-07-13T21:00:00Z", offset: "+03:00", assumed: true},
		{name: "bare display date", raw: `"14.07.2018"`, ok: true, utc: "2018-07-13T21:00:00Z", offset: "+03:00", assumed: true},
		{name: "empty string", raw: `""`},
		{name: "null", raw: `null`},
		{name: "empty object (user.get sample)", raw: `{}`},
		{name: "false (im methods)", raw: `false`},
		{name: "absent", raw: ``},
		{name: "garbage", raw: `"31/02/2024 25:61"`, ok: true, bad: true},
		{name: "impossible day", raw: `"2024-02-31T10:00:00+03:00"`, ok: true, bad: true},
		{name: "a number", raw: `1721722262`, ok: true, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok, err := engine.ParseDate(json.RawMessage(tt.raw), moscow)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if tt.bad {
				if !errors.Is(err, engine.ErrDate) {
					t.Fatalf("err = %v, want ErrDate", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return
			}
			if got := d.UTC.Format(time.RFC3339); got != tt.utc {
				t.Errorf("UTC = %s, want %s", got, tt.utc)
			}
			if d.Offset != tt.offset || d.Assumed != tt.assumed {
				t.Errorf("offset = %s assumed = %v, want %s %v", d.Offset, d.Assumed, tt.offset, tt.assumed)
			}
			var raw string
			if err := json.Unmarshal([]byte(tt.raw), &raw); err != nil || d.Raw != raw {
				t.Errorf("Raw = %q, want the value as received %q", d.Raw, raw)
			}
		})
	}
}
