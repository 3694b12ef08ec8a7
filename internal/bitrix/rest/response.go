package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/rawjson"
)

// ID is a Bitrix24 identifier. Legacy methods send IDs as JSON strings
// ("42"), newer ones as numbers (42); ID accepts both and keeps the text.
// JSON null decodes to the empty ID.
type ID string

// UnmarshalJSON accepts a JSON string, a JSON number or null.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return fmt.Errorf("decode ID: empty input")
	case string(b) == "null":
		*id = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decode ID: %w", err)
		}
		*id = ID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("decode ID %s: not a string or number", b)
	}
	*id = ID(n.String())
	return nil
}

// Int64 returns the ID as an integer, for IDs that are numeric.
func (id ID) Int64() (int64, error) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ID %q is not an integer", string(id))
	}
	return n, nil
}

// String returns the ID's text.
func (id ID) String() string { return string(id) }

// Time is the timing block the portal attaches to every answer, and to
// every command of a batch. Start and Finish are Unix seconds (sometimes
// sent as integers); Operating is the seconds this method has run for this
// webhook over the last 10 minutes, which the portal limits.
type Time struct {
	Start            float64 `json:"start"`
	Finish           float64 `json:"finish"`
	Duration         float64 `json:"duration"`
	Processing       float64 `json:"processing"`
	DateStart        string  `json:"date_start"`
	DateFinish       string  `json:"date_finish"`
	Operating        float64 `json:"operating"`
	OperatingResetAt float64 `json:"operating_reset_at"`
}

// UnmarshalJSON reads the time block of every generation the portal has sent: without
// operating*, with operating only, with operating_reset_at, and since 2025 with an integer start
// and processing 0; numbers may come as strings, and PHP's empty array [] (or null) is an
// empty block.
func (t *Time) UnmarshalJSON(b []byte) error {
	if isEmptyJSON(b) {
		*t = Time{}
		return nil
	}
	var raw struct {
		Start, Finish, Duration, Processing json.RawMessage
		DateStart                           json.RawMessage `json:"date_start"`
		DateFinish                          json.RawMessage `json:"date_finish"`
		Operating                           json.RawMessage
		OperatingResetAt                    json.RawMessage `json:"operating_reset_at"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode time block: %w", err)
	}
	var out Time
	for _, f := range []struct {
		raw json.RawMessage
		to  *float64
	}{{raw.Start, &out.Start}, {raw.Finish, &out.Finish}, {raw.Duration, &out.Duration}, {raw.Processing, &out.Processing},
		{raw.Operating, &out.Operating}, {raw.OperatingResetAt, &out.OperatingResetAt}} {
		n, err := looseFloat(f.raw)
		if err != nil {
			return fmt.Errorf("decode time block: %w", err)
		}
		*f.to = n
	}
	out.DateStart, _ = looseString(raw.DateStart)
	out.DateFinish, _ = looseString(raw.DateFinish)
	*t = out
	return nil
}

// looseFloat reads a number sent as a JSON number or a numeric string; absent, null, "", false
// and [] are 0.
func looseFloat(raw json.RawMessage) (float64, error) {
	if isEmptyJSON(raw) || string(bytes.TrimSpace(raw)) == `""` {
		return 0, nil
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("%.40s is not a number", raw)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return n, nil
}

// looseString reads a string; anything else (absent, null, [], false) is "".
func looseString(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// ResetAt returns when the oldest minute of operating time drops out of the
// portal's 10-minute window, or the zero time when the portal did not say.
func (t Time) ResetAt() time.Time {
	if t.OperatingResetAt <= 0 {
		return time.Time{}
	}
	sec, frac := math.Modf(t.OperatingResetAt)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// Response is a successful answer of one method.
type Response struct {
	// Result is the method's payload, undecoded.
	Result json.RawMessage
	// Next is the start offset of the following page; nil on the last page
	// and for methods that do not page.
	Next *int
	// Total is the number of rows matching the request; nil when the method
	// does not count (for example list methods called with start=-1).
	Total *int
	// Time is the portal's timing block.
	Time Time
}

// GrandTotal returns the total when it can be the count of every matching row, and false when
// the answer itself contradicts that: a next page at or past the total (recorded as next: 50,
// total: 50, the page's own size), or fewer rows in the total than on the page. rows is the
// page's row count; -1 when unknown. An absent total is no grand total either.
func (r *Response) GrandTotal(rows int) (int, bool) {
	if r.Total == nil {
		return 0, false
	}
	t := *r.Total
	if (r.Next != nil && t <= *r.Next) || t < rows {
		return t, false
	}
	return t, true
}

// Decode unmarshals the result into v. PHP's empty array [] is taken for an empty object
// where v has a struct or a map, and {} for an empty list where it has a slice.
func (r *Response) Decode(v any) error {
	if err := decodePHP(r.Result, v); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	return nil
}

// Rows returns the list of rows in the result. path names the keys that
// lead to the list for methods that nest it (tasks.task.list puts rows
// under "tasks", crm.item.list under "items"); with no path the result is
// the list itself. An empty result ([] or {} or null) gives no rows.
func (r *Response) Rows(path ...string) ([]json.RawMessage, error) {
	return rowsAt(r.Result, path)
}

// rowsAt and decodeList read results that came out of a successful decode of the whole answer,
// so they split them with rawjson rather than validating every level again.
func rowsAt(raw json.RawMessage, path []string) ([]json.RawMessage, error) {
	for _, key := range path {
		if isEmptyJSON(raw) {
			return nil, nil
		}
		obj, err := rawjson.Object(raw)
		if err != nil {
			return nil, fmt.Errorf("result: want an object holding %q, got %s", key, firstBytes(raw))
		}
		raw = obj[key]
	}
	if isEmptyJSON(raw) {
		return nil, nil
	}
	return decodeList(raw)
}

// decodeList reads a JSON array, or a JSON object whose values are taken
// in document order: PHP serialises an array with non-sequential keys as an
// object, so lists sometimes arrive in that shape.
func decodeList(raw json.RawMessage) ([]json.RawMessage, error) {
	if list, err := rawjson.Elements(raw); err == nil {
		return list, nil
	}
	var list []json.RawMessage
	err := rawjson.Members(raw, func(_ string, v json.RawMessage) { list = append(list, v) })
	if err != nil {
		return nil, fmt.Errorf("decode list: want an array or an object, got %s", firstBytes(raw))
	}
	return list, nil
}

// isEmptyJSON reports whether raw is absent, null, [], {} or false (im.*
// methods send false for missing values).
func isEmptyJSON(raw json.RawMessage) bool {
	s := string(bytes.TrimSpace(raw))
	switch s {
	case "", "null", "[]", "{}", "false":
		return true
	}
	if (s[0] == '[' || s[0] == '{') && len(bytes.TrimSpace([]byte(s[1:len(s)-1]))) == 0 {
		return true
	}
	return false
}

func firstBytes(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
