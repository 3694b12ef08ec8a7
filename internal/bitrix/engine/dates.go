package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/rawjson"
)

// Date is one date field of a record as seed 000 "Часовые пояса" asks to keep it: the value as
// received, its UTC instant and its original offset. Comparisons use UTC.
type Date struct {
	// Raw is the value exactly as the portal sent it.
	Raw string `json:"raw"`
	// UTC is the instant; zero when Err is set.
	UTC time.Time `json:"utc,omitzero"`
	// Offset is the value's own offset ("+03:00"), or the portal's when the value had none.
	Offset string `json:"offset,omitempty"`
	// Assumed is set when the value carried no offset and the portal's zone was assumed.
	Assumed bool `json:"assumed,omitempty"`
	// Err says why the value could not be read; the record then fails on set.
	Err string `json:"error,omitempty"`
}

// ErrDate is wrapped by the errors of ParseDate.
var ErrDate = errors.New("not a date")

// Layouts Bitrix24 uses. REST answers carry ISO 8601 with an offset (PHP date('c')); some fields
// arrive in the portal's display formats without an offset (research/bitrix.md §5:
// "24.08.2023 13:19:39", "2024-08-29 10:30:11"); date fields may be bare dates.
var (
	offsetLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05-0700", "2006-01-02T15:04:05-07"}
	localLayouts  = []string{"2006-01-02 15:04:05", "02.01.2006 15:04:05", "2006-01-02T15:04:05",
		"2006-01-02", "02.01.2006", "02.01.2006 15:04"}
)

// ParseDate reads a date in any format Bitrix24 sends. Values without an offset are read in
// zone, the portal's time zone. ok is false for an empty value ("", null, false, {} or []), which
// is no date at all rather than a bad one.
func ParseDate(raw json.RawMessage, zone *time.Location) (d Date, ok bool, err error) {
	if IsEmptyValue(raw) {
		return Date{}, false, nil
	}
	s, err := rawjson.String(raw)
	if err != nil {
		d.Raw = string(raw)
		return d, true, fmt.Errorf("%w: a JSON %s, not a string", ErrDate, jsonKind(raw))
	}
	d.Raw = s
	s = strings.TrimSpace(s)
	// Most values are in one of two shapes: try the one the value looks like before the rest (a
	// large get parses millions of dates, and every failed layout costs an error).
	if layout, withOffset := likelyLayout(s); layout != "" {
		if withOffset {
			if t, err := time.Parse(layout, s); err == nil {
				d.UTC, d.Offset = t.UTC(), offsetOf(t)
				return d, true, nil
			}
		} else if t, err := time.ParseInLocation(layout, s, zone); err == nil {
			d.UTC, d.Offset, d.Assumed = t.UTC(), offsetOf(t), true
			return d, true, nil
		}
	}
	for _, layout := range offsetLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			d.UTC, d.Offset = t.UTC(), offsetOf(t)
			return d, true, nil
		}
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, zone); err == nil {
			d.UTC, d.Offset, d.Assumed = t.UTC(), offsetOf(t), true
			return d, true, nil
		}
	}
	return d, true, fmt.Errorf("%w in any format Bitrix24 sends", ErrDate)
}

// likelyLayout guesses the layout of a date by its shape: ISO 8601 with an offset
// ("2024-07-15T00:00:00+03:00"), without one ("2024-08-29 10:30:11"), or the portal's display
// format ("24.08.2023 13:19:39"); "" when it looks like none of them.
func likelyLayout(s string) (layout string, withOffset bool) {
	switch {
	case len(s) == 25 && s[4] == '-' && s[10] == 'T' && (s[19] == '+' || s[19] == '-'):
		return time.RFC3339, true
	case len(s) == 19 && s[4] == '-' && s[10] == ' ':
		return "2006-01-02 15:04:05", false
	case len(s) == 19 && s[2] == '.' && s[10] == ' ':
		return "02.01.2006 15:04:05", false
	}
	return "", false
}

func jsonKind(raw json.RawMessage) string {
	switch s := bytes.TrimSpace(raw); {
	case len(s) == 0:
		return "nothing"
	case s[0] == '{':
		return "object"
	case s[0] == '[':
		return "list"
	case s[0] == 't' || s[0] == 'f':
		return "boolean"
	}
	return "number"
}

func offsetOf(t time.Time) string {
	_, sec := t.Zone()
	sign := byte('+')
	if sec < 0 {
		sign, sec = '-', -sec
	}
	h, m := sec/3600, sec%3600/60
	return string([]byte{sign, byte('0' + h/10), byte('0' + h%10), ':', byte('0' + m/10), byte('0' + m%10)})
}

// IsEmptyValue reports whether a field holds no value: absent, null, "", false, {} or [] (the
// portal sends all of these for "not set").
func IsEmptyValue(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	switch string(s) {
	case "", "null", `""`, "false":
		return true
	}
	if len(s) >= 2 && (s[0] == '{' || s[0] == '[') && len(bytes.TrimSpace(s[1:len(s)-1])) == 0 {
		return true
	}
	return false
}

// parseDates reads the named date fields of a payload. A field that cannot be read is kept with
// its error, so the record fails on set naming the field and its value; the others are unaffected.
func parseDates(fields map[string]json.RawMessage, names []string, zone *time.Location) map[string]Date {
	out := map[string]Date{}
	for _, name := range names {
		d, ok, err := ParseDate(fields[name], zone)
		if !ok {
			continue
		}
		if err != nil {
			d.Err = err.Error()
		}
		out[name] = d
	}
	return out
}

// dateError returns the first unreadable date of a record, in field order, as a reason.
func dateError(dates map[string]Date, names []string) string {
	for _, name := range names {
		if d, ok := dates[name]; ok && d.Err != "" {
			return fmt.Sprintf("date field %s: cannot read %q: %s", name, d.Raw, d.Err)
		}
	}
	return ""
}

// zoneOf returns the portal's time zone: SourceZone, or the offset of the portal's clock in an
// answer (im dates always carry their offset; the zone only matters for those that would not).
func (e *Engine) zoneOf(resp *rest.Response) (*time.Location, error) {
	if e.zone != nil {
		return e.zone, nil
	}
	t, err := time.Parse(time.RFC3339, resp.Time.DateStart)
	if err != nil {
		return nil, fmt.Errorf("the portal's time.date_start %q is not ISO 8601; set the portal's time zone explicitly", resp.Time.DateStart)
	}
	_, offset := t.Zone()
	return time.FixedZone(offsetOf(t), offset), nil
}
