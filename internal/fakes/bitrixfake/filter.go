package bitrixfake

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// cond is one filter condition, like {">ID": 100}.
type cond struct {
	op    string
	field string
	value any
	loc   *time.Location // the portal's time zone, for the row dates of a date condition
	// A nested filter (op opGroup): its conditions, all of which hold, or any with or.
	sub []cond
	or  bool
}

// opGroup is the op of a nested filter's condition.
const opGroup = "()"

// filterOps are the prefixes of Bitrix filter keys, longest first so that
// ">=" is not read as ">".
var filterOps = []string{"!><", "><", ">=", "<=", "!=", "!%", "=%", "%=", "!@", "@", ">", "<", "=", "!", "%"}

func parseFilter(m map[string]any) []cond {
	conds := make([]cond, 0, len(m))
	for key, value := range m {
		op := ""
		for _, candidate := range filterOps {
			if strings.HasPrefix(key, candidate) {
				op = candidate
				break
			}
		}
		conds = append(conds, cond{op: op, field: strings.ToUpper(key[len(op):]), value: value})
	}
	// Deterministic order, so the cheap ID conditions are tried first.
	sort.Slice(conds, func(i, j int) bool { return conds[i].field+conds[i].op < conds[j].field+conds[j].op })
	return conds
}

func (c cond) match(row object) bool {
	if c.op == opGroup {
		for _, s := range c.sub {
			if s.match(row) == c.or {
				return c.or
			}
		}
		return !c.or || len(c.sub) == 0
	}
	rv, _ := row.get(c.field)
	if instants, ok := c.instants(); ok {
		return matchInstant(c.op, rv, instants, c.loc)
	}
	switch c.op {
	case "", "=":
		return equal(rv, c.value)
	case "!", "!=":
		return !equal(rv, c.value)
	case "@":
		return in(rv, c.value)
	case "!@":
		return !in(rv, c.value)
	case "%", "=%", "%=":
		return strings.Contains(strings.ToLower(strval(scalar(rv))), strings.ToLower(strval(c.value)))
	case "!%":
		return !strings.Contains(strings.ToLower(strval(scalar(rv))), strings.ToLower(strval(c.value)))
	case "><", "!><":
		bounds := listOf(c.value)
		ok := len(bounds) == 2 && compare(rv, bounds[0]) >= 0 && compare(rv, bounds[1]) <= 0
		return ok == (c.op == "><")
	case ">":
		return compare(rv, c.value) > 0
	case ">=":
		return compare(rv, c.value) >= 0
	case "<":
		return compare(rv, c.value) < 0
	case "<=":
		return compare(rv, c.value) <= 0
	}
	return false
}

// instants returns the values of a condition datedConds read as dates.
func (c cond) instants() ([]time.Time, bool) {
	switch v := c.value.(type) {
	case time.Time:
		return []time.Time{v}, true
	case []any:
		out := make([]time.Time, 0, len(v))
		for _, x := range v {
			t, ok := x.(time.Time)
			if !ok {
				return nil, false
			}
			out = append(out, t)
		}
		return out, len(out) > 0
	}
	return nil, false
}

// matchInstant compares a row's date with a date condition as instants; an empty date matches
// no condition.
func matchInstant(op string, rv any, values []time.Time, loc *time.Location) bool {
	rt, ok := rowInstant(rv, loc)
	if !ok {
		return false
	}
	anyEqual := slices.ContainsFunc(values, rt.Equal)
	switch op {
	case "", "=", "@":
		return anyEqual
	case "!", "!=", "!@":
		return !anyEqual
	case "><", "!><":
		inside := len(values) == 2 && !rt.Before(values[0]) && !rt.After(values[1])
		return inside == (op == "><")
	case ">":
		return rt.After(values[0])
	case ">=":
		return !rt.Before(values[0])
	case "<":
		return rt.Before(values[0])
	case "<=":
		return !rt.After(values[0])
	}
	return false
}

// scalar turns a row value into something comparable: a list is matched
// by its first element.
func scalar(v any) any {
	if list, ok := v.([]int); ok {
		if len(list) == 0 {
			return nil
		}
		return list[0]
	}
	return v
}

func equal(rv, fv any) bool {
	switch fv.(type) {
	case []any, map[string]any: // {"ID": [1, 2]} means any of them
		return in(rv, fv)
	}
	switch r := rv.(type) {
	case bool: // ACTIVE: filtered with true/false or Y/N
		return r == truthy(fv)
	case []int: // UF_DEPARTMENT: matches when it contains the value
		return slices.Contains(r, intval(fv))
	}
	return compare(rv, fv) == 0
}

func truthy(v any) bool {
	switch s := strings.ToUpper(strval(v)); s {
	case "Y", "1", "TRUE":
		return true
	}
	return false
}

func in(rv, fv any) bool {
	values := listOf(fv)
	if s, ok := fv.(string); ok {
		values = nil
		for _, part := range strings.Split(s, ",") {
			values = append(values, strings.TrimSpace(part))
		}
	}
	for _, v := range values {
		if equal(rv, v) {
			return true
		}
	}
	return false
}

// compare orders a row value against a filter value: numerically when the
// row value is a number (filter values go through intval, as the SQL layer
// does for numeric columns), as instants when both are dates, as text
// otherwise.
func compare(rv, fv any) int {
	rv = scalar(rv)
	switch r := rv.(type) {
	case int:
		return cmpInt(r, intval(fv))
	case string:
		if n, err := strconv.Atoi(r); err == nil && r != "" {
			return cmpInt(n, intval(fv))
		}
		if rt, err := time.Parse(time.RFC3339, r); err == nil {
			if ft, err := time.Parse(time.RFC3339, strval(fv)); err == nil {
				return rt.Compare(ft)
			}
		}
		return strings.Compare(r, strval(fv))
	case bool:
		return cmpInt(intval(r), intval(truthy(fv)))
	case nil:
		return strings.Compare("", strval(fv))
	}
	return strings.Compare(strval(rv), strval(fv))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// listQuery is a list method's request: filter, sort and page.
type listQuery struct {
	filter []cond
	order  string // field to sort by
	desc   bool
	start  int // offset; negative means start=-1: no count (total 0), no next
}

// listResult is one page of rows.
type listResult struct {
	rows    []object
	total   *int
	next    *int
	counted int // rows the count query had to look at
}

// idRange narrows the ID-sorted ids to what the ID conditions of the
// filter allow, with binary search, and returns the other conditions. It
// is what keeps a 100k-row portal fast on ID-keyed paging.
func idRange(ids []int, filter []cond) (lo, hi int, rest []cond) {
	lo, hi = 0, len(ids)
	for _, c := range filter {
		if c.field != "ID" {
			rest = append(rest, c)
			continue
		}
		v := intval(c.value)
		switch c.op {
		case ">":
			lo = max(lo, sort.SearchInts(ids, v+1))
		case ">=":
			lo = max(lo, sort.SearchInts(ids, v))
		case "<":
			hi = min(hi, sort.SearchInts(ids, v))
		case "<=":
			hi = min(hi, sort.SearchInts(ids, v+1))
		case "", "=":
			switch c.value.(type) {
			case []any, map[string]any:
				rest = append(rest, c)
				continue
			}
			lo = max(lo, sort.SearchInts(ids, v))
			hi = min(hi, sort.SearchInts(ids, v+1))
		default:
			rest = append(rest, c)
		}
	}
	return lo, max(lo, hi), rest
}

// list runs a query over the rows with the given IDs (ascending), 50 per
// page as the portal does.
func list(ids []int, row func(id int) object, q listQuery) listResult {
	lo, hi, rest := idRange(ids, q.filter)
	matches := func(r object) bool {
		for _, c := range rest {
			if !c.match(r) {
				return false
			}
		}
		return true
	}
	if q.order != "" && q.order != "ID" {
		return listSorted(ids[lo:hi], row, matches, q)
	}
	// Sorted by ID: walk the range in the requested direction.
	at := func(i int) int { return ids[lo+i] }
	if q.desc {
		at = func(i int) int { return ids[hi-1-i] }
	}
	n := hi - lo
	var res listResult
	skip := max(q.start, 0)
	if len(rest) == 0 { // no row needs looking at: the count is the range
		for i := skip; i < n && len(res.rows) < pageSize; i++ {
			res.rows = append(res.rows, row(at(i)))
		}
		if q.start >= 0 {
			res.setCount(n, q.start)
			res.counted = n
		} else {
			res.uncounted()
		}
		return res
	}
	seen := 0
	for i := 0; i < n; i++ {
		r := row(at(i))
		if !matches(r) {
			continue
		}
		if seen >= skip && len(res.rows) < pageSize {
			res.rows = append(res.rows, r)
		}
		seen++
		if q.start < 0 && len(res.rows) == pageSize {
			break // nothing is counted with start=-1
		}
	}
	if q.start >= 0 {
		res.setCount(seen, q.start)
		res.counted = n
	} else {
		res.uncounted()
	}
	return res
}

func listSorted(ids []int, row func(int) object, matches func(object) bool, q listQuery) listResult {
	var all []object
	for _, id := range ids {
		if r := row(id); matches(r) {
			all = append(all, r)
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, _ := all[i].get(q.order)
		b, _ := all[j].get(q.order)
		c := compare(a, b)
		if q.desc {
			return c > 0
		}
		return c < 0
	})
	var res listResult
	skip := max(q.start, 0)
	if skip < len(all) {
		res.rows = all[skip:min(len(all), skip+pageSize)]
	}
	if q.start >= 0 {
		res.setCount(len(all), q.start)
		res.counted = len(ids)
	} else {
		res.uncounted()
	}
	return res
}

// uncounted is what a page read with start=-1 reports: no next, and a total of 0, the count
// query being skipped (DOCS api-reference/performance/huge-data.md, its sample answer without
// the count: "[total] => 0"). A client must not take it for a count.
func (r *listResult) uncounted() {
	zero := 0
	r.total = &zero
}

func (r *listResult) setCount(total, start int) {
	r.total = &total
	if next := start + pageSize; next < total {
		r.next = &next
	}
}

// selectFields keeps the requested fields of a row. "*" stands for every
// standard field and "UF_*" for every custom one; ID is always kept.
func selectFields(r object, sel []any) object {
	if len(sel) == 0 {
		return r
	}
	want := map[string]bool{"ID": true}
	all, allUF := false, false
	for _, s := range sel {
		name := strings.ToUpper(strval(s))
		switch name {
		case "*":
			all = true
		case "UF_*":
			allUF = true
		default:
			want[name] = true
		}
	}
	out := make(object, 0, len(r))
	for _, f := range r {
		isUF := strings.HasPrefix(f.key, "UF_")
		if want[f.key] || (all && !isUF) || (allUF && isUF) {
			out = append(out, f)
		}
	}
	return out
}

// toGeneric turns a result into plain JSON values (maps, lists, strings,
// numbers), the form batch references are resolved against.
func toGeneric(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}
