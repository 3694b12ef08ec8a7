package bitrixfake

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// user returns a user's row with test overrides applied.
func (p *Portal) user(id int) object {
	row := p.userRow(id)
	for k, v := range p.userOverrides[id] {
		row.set(k, v)
	}
	if p.opts.RealShapes {
		row = p.realUser(row)
	}
	return row
}

// group returns a group's row with test overrides applied.
func (p *Portal) group(id int) object {
	row := p.groupRow(id, len(p.members(id, false)))
	for k, v := range p.groupOverrides[id] {
		row.set(k, v)
	}
	return row
}

// members returns a group's current memberships; activeOnly leaves out
// dismissed users, as sonet_group.user.get does.
func (p *Portal) members(groupID int, activeOnly bool) []member {
	var out []member
	for _, m := range p.groupMembers(groupID) {
		if p.removed[[2]int{groupID, m.userID}] || !p.userExists(m.userID) {
			continue
		}
		if activeOnly {
			if active, _ := p.user(m.userID).get("ACTIVE"); active != true {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

func (p *Portal) userExists(id int) bool {
	_, found := slices.BinarySearch(p.users, id)
	return found
}

func (p *Portal) cost(res listResult) time.Duration {
	return p.opts.CallCost + time.Duration(len(res.rows))*p.opts.RowCost +
		time.Duration(res.counted)*p.opts.CountCost
}

// startParam reads start the way CRestServer does: intval, 0 when absent.
func startParam(params map[string]any) int {
	v, _ := param(params, "start")
	return intval(v)
}

func filterParam(params map[string]any) map[string]any {
	f, _ := param(params, "FILTER")
	m, _ := f.(map[string]any)
	return maps.Clone(m)
}

func rowsOrEmpty(rows []object) []object {
	if rows == nil {
		return []object{}
	}
	return rows
}

// userGet is user.get: top-level sort and order, FILTER, select, start;
// legacy top-level field names (user.get?ID=5) act as filters too.
func (p *Portal) userGet(params map[string]any) answer {
	filter := filterParam(params)
	if filter == nil {
		filter = map[string]any{}
	}
	for k, v := range params {
		field := strings.ToUpper(strings.TrimLeft(k, "!<>=%@"))
		if p.userFilterKeys[field] {
			filter[k] = v
		}
	}
	conds := parseFilter(filter)
	for i := range conds {
		// Dates compare as instants, the row's own formats read too (datefilter.go); a value that
		// is not a date leaves its condition out, the page documents no error for it.
		if p.datedConds(conds[i:i+1], userDateFields) != "" {
			conds[i].field = ""
		}
	}
	conds = slices.DeleteFunc(conds, func(c cond) bool { return c.field == "" })
	q := listQuery{filter: conds, order: "ID", start: startParam(params)}
	if s, ok := param(params, "sort"); ok && strval(s) != "" {
		q.order = strings.ToUpper(strval(s))
	}
	if o, ok := param(params, "order"); ok {
		if m, isMap := o.(map[string]any); isMap { // {"ID": "ASC"}: tolerated
			for field, dir := range m {
				q.order, o = strings.ToUpper(field), dir
				break
			}
		}
		q.desc = strings.EqualFold(strval(o), "DESC")
	}
	res := list(p.users, p.user, q)
	sel, _ := param(params, "select")
	for i, r := range res.rows {
		res.rows[i] = selectFields(r, listOf(sel))
	}
	return answer{result: rowsOrEmpty(res.rows), total: res.total, next: res.next, cost: p.cost(res)}
}

// userDateFields are the dates of user.get's rows, which its filter takes.
var userDateFields = map[string]bool{"LAST_LOGIN": true, "DATE_REGISTER": true, "TIMESTAMP_X": true, "LAST_ACTIVITY_DATE": true}

// userCurrent is user.current: the webhook's own user.
func (p *Portal) userCurrent(map[string]any) answer {
	id, _ := strconv.Atoi(p.opts.UserID)
	return answer{result: p.user(id), cost: p.opts.CallCost}
}

// userFieldsList is user.fields: the standard fields and their labels.
func (p *Portal) userFieldsList(map[string]any) answer {
	return answer{result: p.userFields, cost: p.opts.CallCost}
}

// userfieldList is user.userfield.list: custom fields (UF_USR_*), with
// filter and no paging; total is the count.
func (p *Portal) userfieldList(params map[string]any) answer {
	filter := parseFilter(filterParam(params))
	out := []json.RawMessage{}
	for _, raw := range p.userUserfields {
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			continue
		}
		row := make(object, 0, len(fields))
		for k, v := range fields {
			row = append(row, field{k, v})
		}
		if matchesAll(row, filter) {
			out = append(out, raw)
		}
	}
	total := len(out)
	return answer{result: out, total: &total, cost: p.opts.CallCost}
}

func matchesAll(row object, conds []cond) bool {
	for _, c := range conds {
		if !c.match(row) {
			return false
		}
	}
	return true
}

// groupGet is sonet_group.get: ORDER (default ID descending), FILTER,
// IS_ADMIN, start. Without IS_ADMIN=Y invisible groups are left out, as
// for a user who is not their member.
func (p *Portal) groupGet(params map[string]any) answer {
	filter := filterParam(params)
	if filter == nil {
		filter = map[string]any{}
	}
	if admin, _ := param(params, "IS_ADMIN"); strval(admin) != "Y" {
		filter["=VISIBLE"] = "Y"
	}
	conds := parseFilter(filter)
	sample := p.groupRow(1, 0)
	for i := range conds {
		// Dates compare as instants (datefilter.go); a value that is not a date, or a key that
		// names no field of the rows, leaves its condition out: the page documents no error.
		_, known := sample.get(conds[i].field)
		if one := conds[i : i+1]; !known || p.datedConds(one, groupDateFields) != "" {
			conds[i].field = ""
		}
	}
	conds = slices.DeleteFunc(conds, func(c cond) bool { return c.field == "" })
	q := listQuery{filter: conds, order: "ID", desc: true, start: startParam(params)}
	if o, ok := param(params, "ORDER"); ok {
		if m, isMap := o.(map[string]any); isMap && len(m) > 0 {
			keys := slices.Sorted(maps.Keys(m))
			q.order = strings.ToUpper(keys[0])
			q.desc = strings.EqualFold(strval(m[keys[0]]), "DESC")
		}
	}
	res := list(p.groups, p.group, q)
	return answer{result: rowsOrEmpty(res.rows), total: res.total, next: res.next, cost: p.cost(res)}
}

// groupDateFields are the dates of sonet_group.get's rows, which its filter takes (DOCS
// sonet-group/sonet-group-get.md).
var groupDateFields = map[string]bool{"DATE_CREATE": true, "DATE_UPDATE": true, "DATE_ACTIVITY": true}

// groupUserGet is sonet_group.user.get: every active member of a group in
// one answer, no paging.
func (p *Portal) groupUserGet(params map[string]any) answer {
	v, _ := param(params, "ID")
	id := intval(v)
	if id <= 0 {
		return fail(http.StatusBadRequest, "", "Wrong socialnetwork group ID")
	}
	if _, found := slices.BinarySearch(p.groups, id); !found {
		return fail(http.StatusBadRequest, "", "Socialnetwork group not found")
	}
	rows := []object{}
	for _, m := range p.members(id, true) {
		rows = append(rows, object{{"USER_ID", strconv.Itoa(m.userID)}, {"ROLE", m.role}})
	}
	return answer{result: rows, cost: p.opts.CallCost + time.Duration(len(rows))*p.opts.RowCost}
}

// SetUserField changes a field of a user, as an edit on the portal would;
// a later user.get returns the new value.
func (p *Portal) SetUserField(id int, field string, value any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.userOverrides[id] == nil {
		p.userOverrides[id] = map[string]any{}
	}
	p.userOverrides[id][field] = value
}

// SetGroupField changes a field of a group.
func (p *Portal) SetGroupField(id int, field string, value any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groupOverrides[id] == nil {
		p.groupOverrides[id] = map[string]any{}
	}
	p.groupOverrides[id][field] = value
}

// DeleteUser removes a user, and with them their memberships.
func (p *Portal) DeleteUser(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i, found := slices.BinarySearch(p.users, id); found {
		p.users = slices.Delete(p.users, i, i+1)
	}
}

// RemoveMember takes a user out of a group.
func (p *Portal) RemoveMember(groupID, userID int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removed[[2]int{groupID, userID}] = true
}

// UserIDs returns the IDs of the portal's users, ascending.
func (p *Portal) UserIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.users)
}

// GroupIDs returns the IDs of the portal's groups, ascending, invisible
// ones included.
func (p *Portal) GroupIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.groups)
}

// Member is a membership as sonet_group.user.get reports it.
type Member struct {
	UserID int
	Role   string
}

// ActiveMembers returns what sonet_group.user.get returns for a group.
func (p *Portal) ActiveMembers(groupID int) []Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Member
	for _, m := range p.members(groupID, true) {
		out = append(out, Member{m.userID, m.role})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UserID < out[j].UserID })
	return out
}
