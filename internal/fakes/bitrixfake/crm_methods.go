package bitrixfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The crm.* methods, with the documented answers and refusals (research/bitrix.md §5.7): 400
// NOT_FOUND for an entityTypeId the portal does not have, 400 INVALID_ARG_VALUE for a filter on
// a field the method does not filter by, 403 allowed_only_intranet_user for an extranet
// webhook, access errors for a webhook without CRM rights.

func (p *Portal) initCRMMethods() {
	for name, h := range map[string]handler{
		"crm.type.list":              p.crmTypeList,
		"crm.category.list":          p.crmCategoryList,
		"crm.status.list":            p.crmStatusList,
		"crm.item.list":              p.crmItemList,
		"crm.item.productrow.list":   p.crmProductRowList,
		"crm.company.userfield.list": p.crmUserfieldList(0),
		"crm.contact.userfield.list": p.crmUserfieldList(1),
		"crm.deal.userfield.list":    p.crmUserfieldList(2),
		"userfieldconfig.list":       p.userfieldconfigList,
		"crm.timeline.comment.list":  p.timelineCommentList,
	} {
		p.handlers[name] = p.crmGuard(h)
	}
}

// crmGuard answers the refusals every CRM method shares before the method runs.
func (p *Portal) crmGuard(h handler) handler {
	return func(params map[string]any) answer {
		switch {
		case p.opts.Extranet:
			return fail(http.StatusForbidden, "allowed_only_intranet_user", "Action allowed only for intranet users")
		case p.opts.DenyCRM:
			return fail(http.StatusForbidden, "ACCESS_DENIED", "Access denied")
		}
		return h(params)
	}
}

func (p *Portal) crmTypeList(params map[string]any) answer {
	rows := []object{}
	if p.opts.SmartItems > 0 {
		for _, t := range smartTypes {
			created := p.isoDate(p.epoch().AddDate(8, t.id, 0))
			rows = append(rows, object{
				{"id", t.id}, {"title", t.title}, {"code", ""}, {"createdBy", p.firstUser()}, {"entityTypeId", t.entityTypeID},
				{"customSectionId", nil}, {"isCategoriesEnabled", yn(len(t.categories) > 1)}, {"isStagesEnabled", yn(t.stages)},
				{"isBeginCloseDatesEnabled", "Y"}, {"isClientEnabled", "Y"}, {"isUseInUserfieldEnabled", "Y"},
				{"isLinkWithProductsEnabled", "N"}, {"isMycompanyEnabled", "N"}, {"isDocumentsEnabled", "N"},
				{"isSourceEnabled", "N"}, {"isObserversEnabled", "N"}, {"isRecyclebinEnabled", "Y"},
				{"isAutomationEnabled", "Y"}, {"isBizProcEnabled", "Y"}, {"isSetOpenPermissions", "Y"},
				{"isPaymentsEnabled", "N"}, {"isCountersEnabled", "N"},
				{"createdTime", created}, {"updatedTime", created}, {"updatedBy", p.firstUser()},
			})
		}
	}
	page, total, next := pageOf(rows, startParam(params))
	return answer{result: object{{"types", page}}, total: &total, next: next, cost: p.opts.CallCost}
}

func (p *Portal) firstUser() int {
	if len(p.allUsers) > 0 {
		return p.allUsers[0]
	}
	return 1
}

func yn(b bool) string {
	if b {
		return "Y"
	}
	return "N"
}

// pageOf cuts one 50-row page out of rows at start; start -1 gives the first page without a
// count.
func pageOf(rows []object, start int) ([]object, int, *int) {
	total := len(rows)
	from := max(start, 0)
	page := []object{}
	if from < total {
		page = rows[from:min(total, from+pageSize)]
	}
	var next *int
	if n := from + pageSize; start >= 0 && n < total {
		next = &n
	}
	return page, total, next
}

func (p *Portal) crmCategoryList(params map[string]any) answer {
	v, _ := param(params, "entityTypeId")
	et := intval(v)
	cats, ok := p.categoriesOf(et)
	if !ok {
		return fail(http.StatusBadRequest, "NOT_FOUND", "Smart process not found")
	}
	rows := []object{}
	for i, c := range cats {
		row := object{{"id", c.id}, {"name", c.name}, {"sort", 100 * (i + 1)}, {"entityTypeId", et}, {"isDefault", yn(c.isDefault)}}
		if !c.isDefault {
			row = append(row, field{"originId", ""}, field{"originatorId", ""})
		}
		rows = append(rows, row)
	}
	page, total, next := pageOf(rows, startParam(params))
	return answer{result: object{{"categories", page}}, total: &total, next: next, cost: p.opts.CallCost}
}

func (p *Portal) crmStatusList(params map[string]any) answer {
	filter := filterParam(params)
	var entityID string
	for k, v := range filter {
		if strings.EqualFold(strings.TrimLeft(k, "="), "ENTITY_ID") {
			entityID = strval(v)
		}
	}
	rows := []object{}
	if entityID != "" {
		rows = append(rows, p.stageRows(entityID)...)
	}
	page, total, next := pageOf(rows, startParam(params))
	return answer{result: page, total: &total, next: next, cost: p.opts.CallCost}
}

// crmItemList is crm.item.list: entityTypeId, select (fm only with '*'), filter, order by id,
// start (-1: no count), useOriginalUfNames. The filter takes every field of the item's rows
// (DOCS crm/universal/object-fields.md "Fields in select, filter, and order"), dates compared as
// instants (datefilter.go); a field the rows do not have is refused with INVALID_ARG_VALUE "not
// allowed" (names are camelCase, crm/universal/index.md: the classic lists' "ID" is one the rows
// do not have), a date that is not one with INVALID_ARG_VALUE "has invalid value", the multi-field
// fm with error 100, as the documentation says.
func (p *Portal) crmItemList(params map[string]any) answer {
	v, _ := param(params, "entityTypeId")
	et := intval(v)
	var row func(id int) object
	orig, _ := param(params, "useOriginalUfNames")
	original := strings.EqualFold(strval(orig), "Y")
	switch et {
	case etCompany:
		row = func(id int) object { return p.companyRow(id, original) }
	case etContact:
		row = func(id int) object {
			if p.opts.RealShapes {
				return p.realContact(p.contactRow(id, original))
			}
			return p.contactRow(id, original)
		}
	case etDeal:
		row = func(id int) object { return p.dealRow(id, original) }
	default:
		t, ok := p.smartType(et)
		if !ok {
			return fail(http.StatusBadRequest, "NOT_FOUND", "Smart process not found")
		}
		row = func(id int) object { return p.smartRow(t, id, original) }
	}
	f, _ := param(params, "filter")
	fm, _ := f.(map[string]any)
	sample := row(1) // the fields a filter may name
	conds, refusal := itemFilter(fm, sample)
	if refusal != nil {
		return *refusal
	}
	if bad := p.datedConds(conds, crmDateFields); bad != "" {
		return fail(http.StatusBadRequest, "INVALID_ARG_VALUE", fmt.Sprintf("Invalid filter: field '%s' has invalid value", bad))
	}
	q := listQuery{filter: conds, order: "ID", start: startParam(params)}
	if o, ok := param(params, "order"); ok {
		if m, isMap := o.(map[string]any); isMap {
			// Every field of the rows sorts (object-fields.md); the first key sorted by name
			// decides, the JSON order of several being lost in the decoding.
			for i, field := range slices.Sorted(maps.Keys(m)) {
				dir := strings.ToUpper(strval(m[field]))
				_, known := sample.get(field)
				switch {
				case field != "id" && (!known || field == "fm" || field == "entityTypeId"):
					return fail(http.StatusBadRequest, "INVALID_ARG_VALUE", fmt.Sprintf("Invalid order: field '%s' is not allowed in order", field))
				case dir != "ASC" && dir != "DESC":
					return fail(http.StatusBadRequest, "INVALID_ARG_VALUE", fmt.Sprintf(
						"Invalid order: allowed sort directions are ASC, DESC. But got '%s' for field '%s'", strval(m[field]), field))
				case i > 0:
					continue
				case field != "id":
					q.order = field
				}
				q.desc = dir == "DESC"
			}
		}
	}
	ids := p.crmIDs(et)
	narrowed, scanned, prefiltered := p.crmPrefilter(et, ids, conds)
	if prefiltered {
		ids = narrowed
	}
	// The rows are looked at by their upper-case ID, as the fake's filters do.
	res := list(ids, func(id int) object { return append(object{{"ID", id}}, row(id)...) }, q)
	if prefiltered && q.start >= 0 {
		res.counted = scanned // the portal's count looks at the whole range
	}
	sel, hasSelect := param(params, "select")
	wanted := listOf(sel)
	all := !hasSelect || slices.ContainsFunc(wanted, func(s any) bool { return strval(s) == "*" })
	items := make([]object, len(res.rows))
	for i, r := range res.rows {
		out := make(object, 0, len(r))
		for _, fl := range r[1:] {
			switch {
			case fl.key == "fm" && !(hasSelect && all):
			case all || fl.key == "id" || slices.ContainsFunc(wanted, func(s any) bool { return strval(s) == fl.key }):
				out = append(out, fl)
			}
		}
		items[i] = out
	}
	return answer{result: object{{"items", items}}, total: res.total, next: res.next, cost: p.cost(res)}
}

// itemFilter reads crm.item.list's filter: field keys with their prefixes, and nested filters
// (any key whose value is an object) combined with AND, or with OR when they hold "logic": "OR"
// (DOCS crm-item-list.md: "unlimited nesting"). sample is a row with every field a filter may
// name.
func itemFilter(fm map[string]any, sample object) ([]cond, *answer) {
	var conds []cond
	for key, value := range fm {
		if strings.EqualFold(key, "logic") {
			continue
		}
		if sub, nested := value.(map[string]any); nested && !namesField(key, sample) {
			group, refusal := itemFilter(sub, sample)
			if refusal != nil {
				return nil, refusal
			}
			logic, _ := param(sub, "logic")
			conds = append(conds, cond{op: opGroup, sub: group, or: strings.EqualFold(strval(logic), "OR")})
			continue
		}
		op := ""
		for _, candidate := range filterOps {
			if strings.HasPrefix(key, candidate) {
				op = candidate
				break
			}
		}
		name := key[len(op):]
		_, known := sample.get(name)
		if m, ok := value.(map[string]any); ok {
			value = phpList(m) // a list sent form-encoded arrives as {"0": .., "1": ..}
		}
		switch {
		case name == "id":
			conds = append(conds, cond{op: op, field: "ID", value: value})
		case name == "fm":
			a := fail(http.StatusBadRequest, "100", "Invalid filter: field 'fm' is not allowed in filter")
			return nil, &a
		case known && name != "entityTypeId":
			conds = append(conds, cond{op: op, field: name, value: value})
		default:
			a := fail(http.StatusBadRequest, "INVALID_ARG_VALUE", fmt.Sprintf("Invalid filter: field '%s' is not allowed in filter", name))
			return nil, &a
		}
	}
	return conds, nil
}

// namesField reports whether a filter key names a field of the rows (with its prefix), so that its
// value, even an object, is the field's value: a list form-encoded as filter[@id][0]=1 arrives
// as {"0": "1"}; only a key naming no field holds a nested filter.
func namesField(key string, sample object) bool {
	for _, op := range filterOps {
		if strings.HasPrefix(key, op) {
			key = key[len(op):]
			break
		}
	}
	if key == "id" {
		return true
	}
	_, known := sample.get(key)
	return known
}

// phpList turns an object with the keys 0..n-1 (a list as PHP receives a form-encoded array)
// into that list, in key order; any other object is returned as it is.
func phpList(m map[string]any) any {
	out := make([]any, len(m))
	for k, v := range m {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(m) {
			return m
		}
		out[i] = v
	}
	return out
}

// crmProductRowList is crm.item.productrow.list: the =ownerType and =ownerId filter keys are
// required (REQUIRED_ARG_MISSING without them); 50 rows a page by start.
func (p *Portal) crmProductRowList(params map[string]any) answer {
	filter := filterParam(params)
	ownerType, okType := filter["=ownerType"]
	ownerID, okID := filter["=ownerId"]
	if !okType || !okID {
		return fail(http.StatusBadRequest, "REQUIRED_ARG_MISSING", "Required fields: =ownerType, =ownerId")
	}
	rows := []object{}
	if strval(ownerType) == "D" {
		rows = p.productRows(intval(ownerID))
		if rows == nil {
			rows = []object{}
		}
	}
	start := startParam(params)
	page, total, next := pageOf(rows, start)
	a := answer{result: object{{"productRows", page}}, next: next, cost: p.opts.CallCost + time.Duration(len(page))*p.opts.RowCost}
	if start >= 0 {
		a.total = &total
	}
	return a
}

// crmUserfieldList answers crm.company/contact/deal.userfield.list with the docs' samples.
func (p *Portal) crmUserfieldList(i int) handler {
	return func(map[string]any) answer {
		rows := p.crmUserfields[i]
		total := len(rows)
		return answer{result: rows, total: &total, cost: p.opts.CallCost}
	}
}

// userfieldconfigList is userfieldconfig.list for moduleId crm: the smart processes' fields,
// filtered by entityId if asked, 50 to a page with next.
func (p *Portal) userfieldconfigList(params map[string]any) answer {
	if m, _ := param(params, "moduleId"); strval(m) == "" {
		return fail(http.StatusBadRequest, "", "moduleId is required")
	}
	rows := []object{}
	if p.opts.SmartItems > 0 {
		want := ""
		if f, ok := param(params, "filter"); ok {
			if fm, ok := f.(map[string]any); ok {
				for k, v := range fm {
					if strings.EqualFold(strings.TrimLeft(k, "="), "entityId") {
						want = strval(v)
					}
				}
			}
		}
		for _, r := range smartUserfields() {
			if e, _ := r.get("entityId"); want == "" || e == want {
				rows = append(rows, r)
			}
		}
	}
	page, total, next := pageOf(rows, startParam(params))
	return answer{result: object{{"fields", page}}, total: &total, next: next, cost: p.opts.CallCost}
}

// ProductRowIDs returns the ids of a deal's product rows, for tests.
func (p *Portal) ProductRowIDs(dealID int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.productRows(dealID) {
		id, _ := r.get("id")
		out = append(out, strconv.Itoa(id.(int)))
	}
	return out
}

// DealIDs returns the ids of the portal's deals, ascending.
func (p *Portal) DealIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deals)
}

// CompanyIDs returns the ids of the portal's live companies, ascending.
func (p *Portal) CompanyIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.companies)
}

// DealRow returns a deal as crm.item.list returns it (original custom field names), for tests.
func (p *Portal) DealRow(id int) map[string]json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	raw, _ := appendJSON(nil, p.dealRow(id, true))
	var out map[string]json.RawMessage
	_ = json.Unmarshal(raw, &out)
	return out
}
