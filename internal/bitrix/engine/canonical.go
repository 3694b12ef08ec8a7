package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/rawjson"
)

// Real portals write the same value in several shapes, by method, field and version: "no value"
// as an absent key, "", null, false, [] or {}; yes/no as "Y"/"N" or true/false; ids as numbers
// or strings; amounts as numbers or strings ("5000.00"); a date-only field as a date or as a
// datetime shifted by the portal's offset. What the target receives must not depend on which
// shape the portal happened to use, or the same record lands in several shapes and its checksum
// changes with the portal's mood. So every payload set builds goes through one canonicalization
// step (docs/target-import-api.md, "Canonical values"): generic rules, and per field the kind an
// entity declares in its Shapes or the portal declares for a custom field (USER_TYPE_ID).

// Shapes declares the fields of an entity's payloads whose canonical form the generic rules
// cannot tell. Field names are the payload's as the target receives it. Dates, plain and many
// references, the id field and custom fields (by their USER_TYPE_ID) are known to the engine
// already and need no declaring.
type Shapes struct {
	// Fields are the fields every payload carries: one the portal left out is sent as null. A
	// listed field holds no yes/no unless it is in Booleans, so false in it means no value. An
	// entity that lists them has its other fields left out when they hold no value (a portal
	// leaves out some and sends others empty), its plain references and custom fields on the
	// target kept as null. Without a list every field is kept as the payload has it.
	Fields []string
	// Booleans hold a yes/no ("Y"/"N", true/false, "1"/"0"): sent as true or false.
	Booleans []string
	// IDs hold ids of the portal's own (not references), or lists of them: sent as strings.
	IDs []string
	// Decimals hold amounts: sent as decimal strings without insignificant zeros ("5000.00" and
	// 5000 are "5000").
	Decimals []string
	// DateOnly hold dates without a time of day: sent as "YYYY-MM-DD", also when the portal
	// answers a datetime (at midnight, or midnight UTC shifted by its offset).
	DateOnly []string
	// Keep are sent exactly as the portal wrote them, nested values included (a workflow's
	// template tree, whose "" and [] mean something to the workflow engine).
	Keep []string
}

// valueKind is what a payload field holds, which decides its canonical form.
type valueKind int

const (
	kindAny      valueKind = iota // generic rules only
	kindKeep                      // as sent
	kindText                      // a non-boolean value: false is no value too
	kindBool                      // true/false
	kindID                        // a string id
	kindDecimal                   // a decimal string
	kindNumber                    // a JSON number
	kindDate                      // "YYYY-MM-DD"
	kindDateTime                  // a datetime, already written in its offset by LocalDates
)

// fieldShape is the kind of one field and whether it holds a list (a multiple custom field, a
// list of references), each element then of that kind.
type fieldShape struct {
	kind valueKind
	many bool
}

// shapeSpec is the canonical form of every field of one entity's payloads.
type shapeSpec struct {
	byField map[string]fieldShape
	// always are the fields a payload always carries (null when absent).
	always []string
	// closed: the entity listed its fields (Shapes.Fields), so a field outside always that holds
	// no value is left out, as portals leave such fields out: which of the two a portal did
	// must not show in the payload, and only a known field can be sent as null when left out.
	closed bool
	// byKey maps customKey of every custom field to its name.
	byKey map[string]string
}

// newShapeSpec collects what is known of the entity's fields: its declared Shapes, its dates,
// references and id field, and its custom fields (by their name on the target) with their
// portal types. custom maps a custom field's name on the target to its USER_TYPE_ID and whether
// it is multiple.
func newShapeSpec(ent *Entity, custom map[string]customShape) *shapeSpec {
	s := &shapeSpec{byField: map[string]fieldShape{}}
	set := func(names []string, sh fieldShape) {
		for _, n := range names {
			s.byField[n] = sh
		}
	}
	// A listed field is no yes/no unless declared one (or known to be a date, a reference...):
	// false in it is one more way of writing no value.
	set(ent.Shapes.Fields, fieldShape{kind: kindText})
	set(ent.Dates, fieldShape{kind: kindDateTime})
	for _, r := range ent.Refs {
		if r.Values == nil {
			s.byField[r.Field] = fieldShape{kind: kindID, many: r.Many}
		}
	}
	if ent.ParentField != "" {
		s.byField[ent.ParentField] = fieldShape{kind: kindID}
	}
	for name, c := range custom {
		s.byField[name] = fieldShape{kind: customKind(c.Type), many: c.Multiple}
		if c.OnTarget {
			s.always = append(s.always, name)
		}
	}
	idField := ent.IDField
	if idField == "" {
		idField = "ID"
	}
	s.byField[idField] = fieldShape{kind: kindID}
	// What an entity declares wins over what is guessed from its references and custom fields.
	set(ent.Shapes.Booleans, fieldShape{kind: kindBool})
	set(ent.Shapes.IDs, fieldShape{kind: kindID})
	set(ent.Shapes.Decimals, fieldShape{kind: kindDecimal})
	set(ent.Shapes.DateOnly, fieldShape{kind: kindDate})
	set(ent.Shapes.Keep, fieldShape{kind: kindKeep})
	s.always = append(s.always, ent.Shapes.Fields...)
	s.byKey = map[string]string{}
	for n := range s.byField {
		if strings.HasPrefix(n, "UF_") {
			s.byKey[customKey(n)] = n
		}
	}
	s.closed = len(ent.Shapes.Fields) > 0
	if s.closed {
		// The references are part of an entity's contract too (null for none, or an empty list).
		for _, r := range ent.Refs {
			if r.Values == nil {
				s.always = append(s.always, r.Field)
			}
		}
		if ent.ParentField != "" {
			s.always = append(s.always, ent.ParentField)
		}
	}
	return s
}

// customShape is what the canonical form of a custom field depends on.
type customShape struct {
	Type               string
	Multiple, OnTarget bool
}

// customKind maps a custom field's USER_TYPE_ID to the kind of its values.
func customKind(userType string) valueKind {
	switch userType {
	case "boolean":
		return kindBool
	case "date":
		return kindDate
	case "datetime":
		return kindDateTime
	case "double", "integer":
		return kindNumber
	case "employee", "crm", "iblock_element", "iblock_section", "file", "disk_file", "enumeration", "crm_status":
		return kindID
	case "":
		return kindAny
	}
	return kindText
}

// canonicalize rewrites a payload's fields in place into their canonical form; it fails only on
// a value that is not JSON.
func (s *shapeSpec) canonicalize(fields map[string]json.RawMessage) error {
	known := make(map[string]bool, len(s.always))
	for _, name := range s.always {
		known[name] = true
		if _, ok := fields[name]; !ok {
			fields[name] = jsonNull
		}
	}
	for name, raw := range fields {
		sh, ok := s.byField[name]
		if !ok {
			sh = s.byField[customKeyed(s, name)]
		}
		v, err := canonicalField(sh, raw)
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		if s.closed && !known[name] && bytes.Equal(v, jsonNull) {
			delete(fields, name)
			continue
		}
		fields[name] = v
	}
	return nil
}

// customKeyed finds the declared name of a custom field the payload spells another way
// (ufCrmTask for UF_CRM_TASK); "" when none.
func customKeyed(s *shapeSpec, name string) string {
	if !strings.HasPrefix(name, "uf") && !strings.HasPrefix(name, "UF") {
		return ""
	}
	return s.byKey[customKey(name)]
}

var jsonNull = json.RawMessage("null")

// canonicalField is the canonical form of one field's value.
func canonicalField(sh fieldShape, raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if sh.kind == kindKeep {
		return raw, nil
	}
	// A field of ids, numbers, dates or yes/no may hold a list of them (a multiple custom field,
	// the departments of a user): each element is one of its kind.
	elementwise := sh.kind != kindAny && sh.kind != kindText && sh.kind != kindDateTime
	if sh.many || elementwise && len(raw) > 0 && raw[0] == '[' {
		if isNoValue(raw, kindText) {
			return jsonNull, nil
		}
		if len(raw) > 0 && raw[0] == '[' {
			elems, err := rawjson.Elements(raw)
			if err != nil {
				return nil, err
			}
			out := make([]json.RawMessage, len(elems))
			for i, e := range elems {
				if out[i], err = canonicalValue(sh.kind, e); err != nil {
					return nil, err
				}
			}
			return MustJSON(out), nil
		}
		// A multiple field the portal sent as one value is a list of one.
		v, err := canonicalValue(sh.kind, raw)
		if err != nil || bytes.Equal(v, jsonNull) {
			return v, err
		}
		return MustJSON([]json.RawMessage{v}), nil
	}
	return canonicalValue(sh.kind, raw)
}

// isNoValue reports whether raw means "no value" for a field of the kind: absent, null, "", []
// or {}, and false for every field that cannot hold a boolean.
func isNoValue(raw json.RawMessage, kind valueKind) bool {
	s := bytes.TrimSpace(raw)
	switch string(s) {
	case "", "null", `""`:
		return true
	case "false":
		return kind != kindAny && kind != kindBool
	}
	return len(s) >= 2 && (s[0] == '{' || s[0] == '[') && len(bytes.TrimSpace(s[1:len(s)-1])) == 0
}

// canonicalValue is the canonical form of one value of the kind.
func canonicalValue(kind valueKind, raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if kind == kindKeep {
		return raw, nil
	}
	if isNoValue(raw, kind) {
		return jsonNull, nil
	}
	switch kind {
	case kindAny, kindText, kindDateTime:
		return canonicalNested(raw)
	case kindBool:
		if b, ok := readBool(raw); ok {
			return MustJSON(b), nil
		}
	case kindID:
		id := scalarText(raw)
		if id == "" {
			return canonicalNested(raw) // an object or list: not an id, sent as it is
		}
		if None(id) {
			return jsonNull, nil
		}
		return MustJSON(id), nil
	case kindDecimal, kindNumber:
		if d, ok := canonicalDecimal(scalarText(raw)); ok && kind == kindNumber {
			return json.RawMessage(d), nil
		} else if ok {
			return MustJSON(d), nil
		}
	case kindDate:
		if d, ok := dateOnly(scalarText(raw)); ok {
			return MustJSON(d), nil
		}
	}
	// A value that is not of its field's kind (a yes/no field holding "maybe") is sent as it is
	// rather than lost or failing its record: nothing could be made of it but a guess.
	return canonicalNested(raw)
}

// canonicalNested applies the generic rule inside objects and lists: every member or element
// that holds no value ("", null, [], {}) is null. false stays: nothing says it is not a boolean.
func canonicalNested(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return jsonNull, nil
	}
	switch raw[0] {
	case '{':
		m, err := rawjson.Object(raw)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			if m[k], err = canonicalValue(kindAny, v); err != nil {
				return nil, err
			}
		}
		return MustJSON(m), nil
	case '[':
		elems, err := rawjson.Elements(raw)
		if err != nil {
			return nil, err
		}
		for i, v := range elems {
			if elems[i], err = canonicalValue(kindAny, v); err != nil {
				return nil, err
			}
		}
		return MustJSON(elems), nil
	}
	return raw, nil
}

// scalarText is a string's text or a number's digits; "" for anything else.
func scalarText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		s, _ := rawjson.String(raw)
		return strings.TrimSpace(s)
	case c == '-' || c >= '0' && c <= '9':
		return string(raw)
	}
	return ""
}

// readBool reads the yes/no shapes Bitrix24 uses.
func readBool(raw json.RawMessage) (bool, bool) {
	switch strings.ToUpper(scalarText(raw)) {
	case "Y", "1", "TRUE", "YES":
		return true, true
	case "N", "0", "FALSE", "NO":
		return false, true
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// canonicalDecimal writes a decimal number without a sign for positives, leading zeros,
// insignificant fractional zeros or an exponent: "5000.00", "5000" and 5e3 are "5000", "-0.50"
// is "-0.5", "-0" is "0". Digits are kept as they are, never through a float.
func canonicalDecimal(s string) (string, bool) {
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", "."))
	if s == "" {
		return "", false
	}
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 400 || e < -400 {
			return "", false
		}
		exp, s = e, s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return "", false
	}
	digits := intPart + frac
	point := len(intPart) + exp // digits[:point] is the integer part
	for point > len(digits) {
		digits += "0"
	}
	for point < 0 {
		digits, point = "0"+digits, point+1
	}
	ip, fp := strings.TrimLeft(digits[:point], "0"), strings.TrimRight(digits[point:], "0")
	if ip == "" {
		ip = "0"
	}
	out := ip
	if fp != "" {
		out += "." + fp
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dateOnly reads a date-only field's value: a bare date ("2022-09-03", "03.09.2022") as it is; a
// datetime at midnight in its own offset as that day; a datetime at midnight UTC (the portal's
// answer for a date field: the day's midnight UTC written in the portal's offset,
// "2022-09-03T03:00:00+03:00") as the UTC day; any other datetime as its day in its own offset.
func dateOnly(s string) (string, bool) {
	for _, layout := range []string{"2006-01-02", "02.01.2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format(time.DateOnly), true
		}
	}
	for _, layout := range offsetLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if h, m, sec := t.Clock(); h == 0 && m == 0 && sec == 0 {
				return t.Format(time.DateOnly), true
			}
			if u := t.UTC(); u.Hour() == 0 && u.Minute() == 0 && u.Second() == 0 {
				return u.Format(time.DateOnly), true
			}
			return t.Format(time.DateOnly), true
		}
	}
	for _, layout := range localLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format(time.DateOnly), true
		}
	}
	return "", false
}
