package bitrixfake

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The classic CRM lists, crm.company.list, crm.contact.list and crm.deal.list (DOCS
// crm/companies/crm-company-list.md and its siblings; fixtures crm.*.list.json): deprecated in
// favour of crm.item.list, over the same records, in UPPER_CASE with ids and amounts as strings.
// What is modelled:
//
//   - select: "*" is every standard field without the custom and the multiple ones, "UF_*"
//     every custom one, the multi-fields PHONE, EMAIL, WEB, IM only when named; no select is
//     "*" and "UF_*";
//   - the dates: DATE_CREATE, DATE_MODIFY (MODIFY_BY_ID), LAST_ACTIVITY_TIME (LAST_ACTIVITY_BY),
//     MOVED_TIME, BEGINDATE, CLOSEDATE, in ISO 8601 with the portal's offset;
//   - filter with the usual prefixes, dates compared as instants (datefilter.go); the pages
//     document no error for a field or a value a filter cannot use, and the fake leaves such a
//     condition out, as the portal's legacy filter does with keys it does not know;
//   - order by any field (default ID ascending), start by 50 (-1: no count).

// classicKeys are the UPPER_CASE names of crm.item.list's fields where they are not its
// camelCase spelled in capitals (DOCS crm/universal/object-fields.md, crm-deal-fields.md).
var classicKeys = map[string]string{
	"createdTime": "DATE_CREATE", "updatedTime": "DATE_MODIFY", "createdBy": "CREATED_BY_ID",
	"updatedBy": "MODIFY_BY_ID", "movedBy": "MOVED_BY_ID", "companyTypeId": "COMPANY_TYPE",
	"stageSemanticId": "STAGE_SEMANTIC_ID",
}

// classicDropped are crm.item.list fields the classic lists do not return.
var classicDropped = map[string]bool{"contactIds": true, "observers": true, "entityTypeId": true}

// classicDateFields are the dates of the classic lists' rows.
var classicDateFields = map[string]bool{"DATE_CREATE": true, "DATE_MODIFY": true, "LAST_ACTIVITY_TIME": true,
	"MOVED_TIME": true, "BEGINDATE": true, "CLOSEDATE": true, "BIRTHDATE": true}

// classicMulti are the multi-fields, by the typeId of fm's values.
var classicMulti = []string{"PHONE", "EMAIL", "WEB", "IM"}

// upperSnake spells a camelCase name in UPPER_SNAKE_CASE: lastActivityTime -> LAST_ACTIVITY_TIME.
func upperSnake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// classicValue renders a value as the classic lists do: numbers as strings.
func classicValue(v any) any {
	switch t := v.(type) {
	case int:
		return strconv.Itoa(t)
	case json.RawMessage:
		return string(t)
	}
	return v
}

// classicRow renders a crm.item.list row (with original custom field names) as the classic
// lists do.
func classicRow(item object) object {
	out := make(object, 0, len(item)+len(classicMulti))
	for _, f := range item {
		switch {
		case classicDropped[f.key]:
		case f.key == "fm":
			byType := map[string][]any{}
			for _, m := range f.value.([]object) {
				typ, _ := m.get("typeId")
				id, _ := m.get("id")
				vt, _ := m.get("valueType")
				val, _ := m.get("value")
				byType[strval(typ)] = append(byType[strval(typ)], object{{"ID", classicValue(id)}, {"VALUE_TYPE", vt},
					{"VALUE", val}, {"TYPE_ID", typ}})
			}
			for _, typ := range classicMulti {
				if list := byType[typ]; list != nil {
					out = append(out, field{typ, list})
				}
			}
		case strings.HasPrefix(f.key, "UF_"):
			out = append(out, f)
		default:
			key := classicKeys[f.key]
			if key == "" {
				key = upperSnake(f.key)
			}
			out = append(out, field{key, classicValue(f.value)})
		}
	}
	return out
}

func (p *Portal) initCRMClassic() {
	for name, et := range map[string]int{"crm.company.list": etCompany, "crm.contact.list": etContact, "crm.deal.list": etDeal} {
		p.handlers[name] = p.crmGuard(p.crmClassicList(et))
	}
}

// crmClassicList answers crm.company.list, crm.contact.list or crm.deal.list.
func (p *Portal) crmClassicList(et int) handler {
	return func(params map[string]any) answer {
		row := func(id int) object { return classicRow(p.crmRow(et, id, true)) }
		conds := parseFilter(filterParam(params))
		sample := row(1)
		conds = slices.DeleteFunc(conds, func(c cond) bool {
			_, known := sample.get(c.field)
			return !known
		})
		for i := range conds {
			if p.datedConds(conds[i:i+1], classicDateFields) != "" {
				conds[i].field = ""
			}
		}
		conds = slices.DeleteFunc(conds, func(c cond) bool { return c.field == "" })
		q := listQuery{filter: conds, order: "ID", start: startParam(params)}
		if o, ok := param(params, "order"); ok {
			if m, isMap := o.(map[string]any); isMap && len(m) > 0 {
				keys := slices.Sorted(maps.Keys(m))
				q.order = strings.ToUpper(keys[0])
				q.desc = strings.EqualFold(strval(m[keys[0]]), "DESC")
			}
		}
		res := list(p.crmIDs(et), row, q)
		sel, hasSelect := param(params, "select")
		wanted := listOf(sel)
		if !hasSelect || len(wanted) == 0 {
			wanted = []any{"*", "UF_*"}
		}
		for i, r := range res.rows {
			res.rows[i] = classicSelect(r, wanted)
		}
		return answer{result: rowsOrEmpty(res.rows), total: res.total, next: res.next, cost: p.cost(res)}
	}
}

// classicSelect keeps the selected fields: selectFields, with the multi-fields only when named.
func classicSelect(r object, sel []any) object {
	named := map[string]bool{}
	for _, s := range sel {
		named[strings.ToUpper(strval(s))] = true
	}
	out := selectFields(r, sel)
	return slices.DeleteFunc(out, func(f field) bool {
		return slices.Contains(classicMulti, f.key) && !named[f.key]
	})
}
