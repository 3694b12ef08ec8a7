package bitrixfake

import (
	"strings"
	"time"
)

// Filters on dates (DOCS api-reference/data-types.md, research/bitrix.md §5): a filter value is
// an ISO 8601 date and time with its offset ("2024-07-18T14:00:14+02:00"), or one without an
// offset, or a bare date, or the portal's own format ("18.07.2024 14:00:14"); the ones without an
// offset are in the portal's time zone. The row's value is compared with it as an instant, so a
// filter written in another offset than the portal's selects the same records.

// filterDateLayouts are the layouts a date filter value is read with, in order.
var filterDateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04",
	"2006-01-02",
	"02.01.2006 15:04:05",
	"02.01.2006 15:04",
	"02.01.2006",
}

// parseFilterDate reads a date filter value; ok is false for a value that is not a date.
func (p *Portal) parseFilterDate(v any) (time.Time, bool) {
	s := strings.TrimSpace(strval(v))
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range filterDateLayouts {
		if t, err := time.ParseInLocation(layout, s, p.opts.Location); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// datedConds turns the values of the conditions on the given date fields into instants. It
// returns the field of the first condition whose value is not a date, or "". Conditions on
// sets (@, !@) and on ranges (><) have each value read.
func (p *Portal) datedConds(conds []cond, dateFields map[string]bool) (invalid string) {
	for i, c := range conds {
		if c.op == opGroup {
			if bad := p.datedConds(c.sub, dateFields); bad != "" {
				return bad
			}
			continue
		}
		if !dateFields[c.field] {
			continue
		}
		conds[i].loc = p.opts.Location
		switch c.value.(type) {
		case []any, map[string]any:
			var list []any
			for _, v := range listOf(c.value) {
				t, ok := p.parseFilterDate(v)
				if !ok {
					return c.field
				}
				list = append(list, t)
			}
			conds[i].value = list
			continue
		}
		t, ok := p.parseFilterDate(c.value)
		if !ok {
			return c.field
		}
		conds[i].value = t
	}
	return ""
}

// rowInstant reads a row's date value: ISO 8601 with an offset, as the portal renders dates, or
// one of the portal's own formats user.get answers some dates in (data.go), in its time zone
// loc; ok is false for an empty date (null, "" or false), which no comparison selects, as SQL's
// NULL.
func rowInstant(rv any, loc *time.Location) (time.Time, bool) {
	s, isString := rv.(string)
	if !isString || s == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	if loc == nil {
		return time.Time{}, false
	}
	for _, layout := range []string{"02.01.2006 15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
