package bitrix

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// crmFieldLinks is what the reference custom fields of CRM items name: employee fields users,
// crm fields the CRM's records, written as crmLinks says.
func crmFieldLinks() *engine.FieldLinks { return &engine.FieldLinks{Employee: Users, CRM: crmLinks{}} }

// crmLinks are the CRM's rules for crm field values: "CO_12", "C_5", "D_7", "T40e_3" for item 3
// of the smart process 1038 = 0x40e, or a bare id when the field allows one type only.
type crmLinks struct{}

// crmPrefixes are the prefixes of crm field values and the entities they name.
var crmPrefixes = map[string]string{"CO": Companies, "C": Contacts, "D": Deals}

// FieldEntity reads a crm field's SETTINGS ({"COMPANY": "Y", "DEAL": "N", "DYNAMIC_1038":
// "Y"...}, the flags also as booleans; PHP's [] when empty): the entity its bare ids name when it
// allows exactly one type, else "".
func (crmLinks) FieldEntity(settings []byte) string {
	var m map[string]any
	if json.Unmarshal(settings, &m) != nil {
		return ""
	}
	var allowed []string
	for k, v := range m {
		if s, ok := v.(string); ok && (s == "Y" || s == "1") || v == true { // "Y", or a boolean as some versions write it
			allowed = append(allowed, k)
		}
	}
	if len(allowed) != 1 {
		return ""
	}
	switch t := allowed[0]; {
	case t == "COMPANY":
		return Companies
	case t == "CONTACT":
		return Contacts
	case t == "DEAL":
		return Deals
	case strings.HasPrefix(t, "DYNAMIC_"):
		return Smart + ":" + strings.TrimPrefix(t, "DYNAMIC_")
	}
	return ""
}

// Value reads one crm field value: the entity and source id it names. single is the entity of
// the field's bare ids ("smart:1038" for a smart process's).
func (crmLinks) Value(v, single string) (entity, id string, ok bool) {
	if prefix, rest, found := strings.Cut(v, "_"); found {
		if e, known := crmPrefixes[prefix]; known {
			return e, rest, true
		}
		if len(prefix) > 1 && prefix[0] == 'T' {
			if et, err := strconv.ParseInt(prefix[1:], 16, 64); err == nil {
				return Smart, strconv.FormatInt(et, 10) + ":" + rest, true
			}
		}
		return "", "", false // a lead (L_) or a type not migrated
	}
	if et, smart := strings.CutPrefix(single, Smart+":"); smart {
		return Smart, et + ":" + v, true
	}
	if single != "" {
		return single, v, true
	}
	return "", "", false
}

// Maps: a smart process item's value names its type by the portal's id, which the target
// numbers differently.
func (crmLinks) Maps() []string { return []string{CRMTypes} }

// Rewrite keeps the value's prefix (with the smart process type's target id in hex for "T").
func (crmLinks) Rewrite(v, entity, id, t string, target func(entity, id string) (string, bool)) (string, bool) {
	prefix, _, prefixed := strings.Cut(v, "_")
	switch {
	case !prefixed:
		return t, true
	case entity == Smart:
		et, _, _ := strings.Cut(id, ":")
		tt, ok := target(CRMTypes, et)
		n, err := strconv.ParseInt(tt, 10, 64)
		if !ok || err != nil {
			return v, false
		}
		return "T" + strconv.FormatInt(n, 16) + "_" + t, true
	}
	return prefix + "_" + t, true
}
