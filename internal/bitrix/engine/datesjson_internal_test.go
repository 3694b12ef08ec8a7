package engine

import (
	"encoding/json"
	"testing"
	"time"
)

// datesJSON is written by hand for speed; it must write what json.Marshal writes.
func TestDatesJSONIsWhatMarshalWrites(t *testing.T) {
	msk := time.FixedZone("MSK", 3*3600)
	cases := []map[string]Date{
		nil,
		{},
		{"createdTime": {Raw: "2023-09-16T01:00:42+03:00", UTC: time.Date(2023, 9, 15, 22, 0, 42, 0, time.UTC), Offset: "+03:00"}},
		{"b": {Raw: "24.08.2023 13:19:39", UTC: time.Date(2023, 8, 24, 10, 19, 39, 500, time.UTC), Offset: "+03:00", Assumed: true},
			"a": {Raw: `1 <2> & "3" \ ` + "\u2028\x01", Err: "not a date <&>"},
			"ü": {Raw: "", UTC: time.Date(2020, 1, 1, 0, 0, 0, 0, msk)}},
	}
	for _, c := range cases {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			want = []byte("{}") // a record without dates is stored as the column's default
		}
		if got := datesJSON(c); got != string(want) {
			t.Errorf("datesJSON(%v)\n got %s\nwant %s", c, got, want)
		}
	}
}
