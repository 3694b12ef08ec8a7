package engine

import (
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A delta pass's date filter is written as the documentation writes datetimes
// (api-reference/data-types.md: YYYY-MM-DDThh:mm:ss±hh:mm), whatever the portal's offset: a
// portal in UTC gets +00:00, not RFC 3339's Z, which no page documents as a filter value.
func TestFilteredScanDateForm(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 9, 11, 50, 0, 0, time.UTC)
	tests := []struct {
		name string
		zone *time.Location
		want string
	}{
		{"the portal's zone unknown", nil, "2026-03-09T11:50:00+00:00"},
		{"a portal in UTC", time.UTC, "2026-03-09T11:50:00+00:00"},
		{"a portal's offset of zero", time.FixedZone("+00:00", 0), "2026-03-09T11:50:00+00:00"},
		{"east of Greenwich", time.FixedZone("+03:00", 3*3600), "2026-03-09T14:50:00+03:00"},
		{"west of Greenwich", time.FixedZone("-05:30", -(5*3600 + 1800)), "2026-03-09T06:20:00-05:30"},
	}
	s := &IDScan{Scan: rest.Scan{Method: "crm.item.list", Params: map[string]any{"entityTypeId": 2}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := s.filtered(&Entity{Name: "deals"}, "updatedTime", since, tt.zone)
			if got := f.Scan.Params["filter"].(map[string]any)[">updatedTime"]; got != tt.want {
				t.Errorf(">updatedTime = %v, want %s", got, tt.want)
			}
		})
	}
}
