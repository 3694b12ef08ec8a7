package bitrix

import (
	"context"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

func TestCRMFieldValuesNameTheirRecords(t *testing.T) {
	for _, c := range []struct {
		value, single, entity, id string
		ok                        bool
	}{
		{"CO_12", "", Companies, "12", true},
		{"C_5", "", Contacts, "5", true},
		{"D_7", Deals, Deals, "7", true},
		{"T40e_3", "", Smart, "1038:3", true},
		{"L_9", "", "", "", false}, // leads are not migrated
		{"42", Deals, Deals, "42", true},
		{"42", Smart + ":1038", Smart, "1038:42", true},
		{"42", "", "", "", false},
	} {
		entity, id, ok := crmLinks{}.Value(c.value, c.single)
		if entity != c.entity || id != c.id || ok != c.ok {
			t.Errorf("crmValue(%q, %q) = %q %q %v, want %q %q %v", c.value, c.single, entity, id, ok, c.entity, c.id, c.ok)
		}
	}
	if got := (crmLinks{}).FieldEntity([]byte(`{"COMPANY": "N", "DYNAMIC_1038": "Y"}`)); got != Smart+":1038" {
		t.Errorf("single smart process field: %q", got)
	}
	// The shapes recorded from real portals: the flags as booleans, PHP's [] for no settings.
	for settings, want := range map[string]string{`{"COMPANY": true, "DEAL": false}`: Companies, `[]`: "", `{"CONTACT": "1"}`: Contacts} {
		if got := (crmLinks{}).FieldEntity([]byte(settings)); got != want {
			t.Errorf("FieldEntity(%s) = %q, want %q", settings, got, want)
		}
	}
	rf := &engine.Refs{Maps: map[string]engine.IDMap{Companies: {"12": "500"}, Smart: {"1038:3": "700"}, CRMTypes: {"1038": "26"}},
		Links: engine.LinkedFields{FieldLinks: crmFieldLinks()}}
	for value, want := range map[string]string{"CO_12": "CO_500", "T40e_3": "T1a_700", "CO_13": "CO_13"} {
		if got, _ := rf.CRMTarget(value, ""); got != want {
			t.Errorf("crmTarget(%q) = %q, want %q", value, got, want)
		}
	}
}

func TestFieldNamesFollowThePortalsRules(t *testing.T) {
	n := &engine.FieldNaming{Prefix: "UF_CRM_", Max: 50}
	for name, want := range map[string]string{
		"UF_CRM_HELLO_WORLD": "UF_CRM_HELLO_WORLD",
		"UF_CRM_hello-world": "UF_CRM_HELLO_WORLD",
		"UF_MANAGER_NOTE":    "UF_CRM_MANAGER_NOTE",
	} {
		got, _, err := n.Target(context.Background(), nil, name)
		if err != nil || got.Name != want {
			t.Errorf("%s -> %q (%v), want %s", name, got.Name, err, want)
		}
	}
	long := "UF_CRM_" + strings.Repeat("X", 60)
	got, renamed, _ := n.Target(context.Background(), nil, long)
	if !renamed || len(got.Name) != 50 || !strings.HasPrefix(got.Name, "UF_CRM_XXX") || !strings.Contains(got.Why, "longer than 50") {
		t.Errorf("%s -> %q (%s)", long, got.Name, got.Why)
	}
}
