package engine

import (
	"encoding/json"
	"testing"
)

func TestCanonicalValue(t *testing.T) {
	cases := []struct {
		name string
		kind fieldShape
		in   string
		want string
	}{
		// "No value", whatever the portal wrote.
		{"empty string", fieldShape{}, `""`, `null`},
		{"null", fieldShape{}, `null`, `null`},
		{"empty list", fieldShape{}, `[]`, `null`},
		{"empty object", fieldShape{}, `{ }`, `null`},
		{"false of an unknown field stays", fieldShape{}, `false`, `false`},
		{"false of a text field", fieldShape{kind: kindText}, `false`, `null`},
		{"false of a date", fieldShape{kind: kindDateTime}, `false`, `null`},
		{"{} for an empty date", fieldShape{kind: kindDateTime}, `{}`, `null`},
		{"text as sent", fieldShape{}, `"Анна"`, `"Анна"`},
		{"PHP [] where an object is expected, nested", fieldShape{}, `{"params":[],"a":{"b":""},"c":"x"}`,
			`{"a":{"b":null},"c":"x","params":null}`},
		{"nested list elements", fieldShape{}, `[{"x":""},"y"]`, `[{"x":null},"y"]`},
		{"kept as sent", fieldShape{kind: kindKeep}, `{"a":"","b":[]}`, `{"a":"","b":[]}`},
		// Booleans.
		{"Y", fieldShape{kind: kindBool}, `"Y"`, `true`},
		{"N", fieldShape{kind: kindBool}, `"N"`, `false`},
		{"true", fieldShape{kind: kindBool}, `true`, `true`},
		{"false of a boolean", fieldShape{kind: kindBool}, `false`, `false`},
		{"1", fieldShape{kind: kindBool}, `"1"`, `true`},
		{"0 number", fieldShape{kind: kindBool}, `0`, `false`},
		{"empty boolean", fieldShape{kind: kindBool}, `""`, `null`},
		{"not a yes/no: as sent", fieldShape{kind: kindBool}, `"maybe"`, `"maybe"`},
		// Ids.
		{"id number", fieldShape{kind: kindID}, `42`, `"42"`},
		{"id string", fieldShape{kind: kindID}, `"42"`, `"42"`},
		{"id 0", fieldShape{kind: kindID}, `0`, `null`},
		{"id \"0\"", fieldShape{kind: kindID}, `"0"`, `null`},
		{"id false", fieldShape{kind: kindID}, `false`, `null`},
		{"crm code", fieldShape{kind: kindID}, `"C_627"`, `"C_627"`},
		{"id list", fieldShape{kind: kindID, many: true}, `[1,"2"]`, `["1","2"]`},
		{"empty id list", fieldShape{kind: kindID, many: true}, `[]`, `null`},
		{"id list false", fieldShape{kind: kindID, many: true}, `false`, `null`},
		{"one id for a list", fieldShape{kind: kindID, many: true}, `7`, `["7"]`},
		{"ids in an id field", fieldShape{kind: kindID}, `[12,"40"]`, `["12","40"]`},
		{"yes/no list", fieldShape{kind: kindBool}, `["Y",false]`, `[true,false]`},
		// Numbers.
		{"decimal string", fieldShape{kind: kindDecimal}, `"5000.00"`, `"5000"`},
		{"decimal number", fieldShape{kind: kindDecimal}, `5000`, `"5000"`},
		{"decimal fraction", fieldShape{kind: kindDecimal}, `"0.50"`, `"0.5"`},
		{"decimal exact digits", fieldShape{kind: kindDecimal}, `12345678901234.56`, `"12345678901234.56"`},
		{"decimal exponent", fieldShape{kind: kindDecimal}, `1.5e3`, `"1500"`},
		{"decimal negative zero", fieldShape{kind: kindDecimal}, `"-0.00"`, `"0"`},
		{"decimal empty", fieldShape{kind: kindDecimal}, `""`, `null`},
		{"number from string", fieldShape{kind: kindNumber}, `"123.50"`, `123.5`},
		{"number list", fieldShape{kind: kindNumber, many: true}, `["1.5",2]`, `[1.5,2]`},
		// Date-only fields.
		{"date", fieldShape{kind: kindDate}, `"2022-09-03"`, `"2022-09-03"`},
		{"date at local midnight", fieldShape{kind: kindDate}, `"2022-09-03T00:00:00+03:00"`, `"2022-09-03"`},
		{"date shifted by the portal's offset", fieldShape{kind: kindDate}, `"2022-09-03T03:00:00+03:00"`, `"2022-09-03"`},
		{"date shifted west", fieldShape{kind: kindDate}, `"2022-09-02T19:00:00-05:00"`, `"2022-09-03"`},
		{"date in the display format", fieldShape{kind: kindDate}, `"03.09.2022"`, `"2022-09-03"`},
		{"date with a time, no offset", fieldShape{kind: kindDate}, `"03.09.2022 00:00:00"`, `"2022-09-03"`},
		{"date empty object", fieldShape{kind: kindDate}, `{}`, `null`},
		{"date list", fieldShape{kind: kindDate, many: true}, `["2024-01-13T03:00:00+03:00","2024-02-01"]`, `["2024-01-13","2024-02-01"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := canonicalField(c.kind, json.RawMessage(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("canonical %s = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

// TestCanonicalShapesGiveOnePayload: the same record in every shape a portal answers it in
// canonicalizes to the same payload, and so to the same checksum.
func TestCanonicalShapesGiveOnePayload(t *testing.T) {
	ent := &Entity{Name: "users", Dates: []string{"TIMESTAMP_X"},
		Refs: []Ref{{Field: "MANAGER", Entity: "users", Optional: true}},
		Shapes: Shapes{Fields: []string{"ID", "NAME", "SECOND_NAME", "WORK_PHONE", "TIMESTAMP_X", "MANAGER"},
			Booleans: []string{"ACTIVE"}, DateOnly: []string{"PERSONAL_BIRTHDAY"}, Decimals: []string{"SALARY"}}}
	shape := newShapeSpec(ent, map[string]customShape{
		"UF_DATE":  {Type: "date", OnTarget: true},
		"UF_LEVEL": {Type: "enumeration", Multiple: true, OnTarget: true},
	})
	shapes := []string{
		`{"ID":"7","ACTIVE":true,"NAME":"Анна","SECOND_NAME":"","WORK_PHONE":"","TIMESTAMP_X":"","MANAGER":"0",
		  "PERSONAL_BIRTHDAY":"1990-05-01","SALARY":"5000.00","UF_DATE":"2022-09-03","UF_LEVEL":[],"EXTRA":""}`,
		`{"ID":7,"ACTIVE":"Y","NAME":"Анна","TIMESTAMP_X":{},"MANAGER":null,
		  "PERSONAL_BIRTHDAY":"1990-05-01T03:00:00+03:00","SALARY":5000,"UF_DATE":"2022-09-03T03:00:00+03:00","UF_LEVEL":false,"EXTRA":{}}`,
		`{"ID":"7","ACTIVE":"1","NAME":"Анна","SECOND_NAME":null,"WORK_PHONE":false,"MANAGER":0,
		  "PERSONAL_BIRTHDAY":"01.05.1990","SALARY":"5000","UF_DATE":"2022-09-03T00:00:00+03:00","UF_LEVEL":""}`,
	}
	var first string
	for i, s := range shapes {
		fields, err := FieldsOf(json.RawMessage(s))
		if err != nil {
			t.Fatal(err)
		}
		if err := shape.canonicalize(fields); err != nil {
			t.Fatal(err)
		}
		got := string(MustJSON(fields))
		if i == 0 {
			first = got
			continue
		}
		if got != first {
			t.Errorf("shape %d canonicalizes to\n%s\nshape 0 to\n%s", i, got, first)
		}
	}
	want := `{"ACTIVE":true,"ID":"7","MANAGER":null,"NAME":"Анна","PERSONAL_BIRTHDAY":"1990-05-01","SALARY":"5000",` +
		`"SECOND_NAME":null,"TIMESTAMP_X":null,"UF_DATE":"2022-09-03","UF_LEVEL":null,"WORK_PHONE":null}`
	if first != want {
		t.Errorf("canonical payload\n%s\nwant\n%s", first, want)
	}
}

func TestRecordChecksumIgnoresTheShapeOfNoValue(t *testing.T) {
	rows := []string{
		`{"ID":"7","NAME":"Анна","SECOND_NAME":"","UF_LEVEL":[],"IS_ONLINE":"Y"}`,
		`{"ID":"7","NAME":"Анна","SECOND_NAME":null,"UF_LEVEL":{},"IS_ONLINE":"N"}`,
		`{"NAME":"Анна","ID":"7"}`,
	}
	var sums []string
	for _, r := range rows {
		fields, err := FieldsOf(json.RawMessage(r))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := recordChecksum(fields, []string{"IS_ONLINE"})
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
	}
	if sums[0] != sums[1] || sums[1] != sums[2] {
		t.Errorf("checksums differ by the shape of no value: %v", sums)
	}
	// A row without empty fields keeps the checksum earlier versions stored.
	fields, _ := FieldsOf(json.RawMessage(rows[2]))
	old, _ := fieldsChecksum(fields, []string{"IS_ONLINE"})
	if sums[2] != old {
		t.Errorf("a row without empty fields changed its checksum: %s, was %s", sums[2], old)
	}
	changed, _ := FieldsOf(json.RawMessage(`{"ID":"7","NAME":"Анна Ивановна"}`))
	if sum, _ := recordChecksum(changed, nil); sum == sums[2] {
		t.Error("a changed value did not change the checksum")
	}
}

// TestCanonicalWithoutAFieldList: an entity that does not list its fields keeps every field its
// payload has (a hook's nulls by contract), only in canonical form.
func TestCanonicalWithoutAFieldList(t *testing.T) {
	shape := newShapeSpec(&Entity{Name: "feed_recipients"}, nil)
	fields, _ := FieldsOf(json.RawMessage(`{"post_id":"100001","type":"all_users","group_id":null,"user_id":""}`))
	if err := shape.canonicalize(fields); err != nil {
		t.Fatal(err)
	}
	if got, want := string(MustJSON(fields)), `{"group_id":null,"post_id":"100001","type":"all_users","user_id":null}`; got != want {
		t.Errorf("canonical %s, want %s", got, want)
	}
}
