package engine_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// reportDoc is where the stored verify report's JSON is described, key by key.
const reportDoc = "../../../docs/verify-report.md"

// TestVerifyReportJSONKeys: every field of the verify report as stored (bitrix_inventory's
// verify_report) and shown by `ingest bitrix status --json` has a lower-case JSON key of its own
// (a field without a tag would be stored under its Go name, as ChildCounts.Summary was), and
// docs/verify-report.md describes every key, in the section of the type that holds it (a heading
// naming the type as (`RecordIssue`)). The types and keys are found by reflection, so a field
// added to the report, or to a type it holds, is checked without this test changing.
func TestVerifyReportJSONKeys(t *testing.T) {
	doc, err := os.ReadFile(reportDoc)
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	pkg := reflect.TypeFor[engine.VerifyReport]().PkgPath()
	keys := map[string][]string{} // type name -> its keys
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			walk(typ.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if typ.PkgPath() != pkg {
			return // time.Time and the like encode themselves
		}
		if _, seen := keys[typ.Name()]; seen {
			return
		}
		keys[typ.Name()] = []string{}
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !key.MatchString(name) {
				t.Errorf("%s.%s has the JSON key %q, want a lower-case one of its own", typ.Name(), f.Name, name)
				continue
			}
			keys[typ.Name()] = append(keys[typ.Name()], name)
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[engine.VerifyReport]())
	if len(keys) < 6 || len(keys["VerifyReport"]) < 30 {
		t.Fatalf("found the types %v in the verify report, want all of them", keys)
	}
	for typ, names := range keys {
		section := docSection(string(doc), typ)
		if section == "" {
			t.Errorf("%s has no section on %s: a heading naming it as (`%s`)", reportDoc, typ, typ)
			continue
		}
		for _, name := range names {
			if !strings.Contains(section, "`"+name+"`") {
				t.Errorf("%s does not describe %s's key `%s` in its section", reportDoc, typ, name)
			}
		}
	}
}

// docSection returns the part of a Markdown document from the heading that names typ as
// (`typ`) to the next heading of any level; "" when no heading names it.
func docSection(doc, typ string) string {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "#") || !strings.Contains(l, "(`"+typ+"`)") {
			continue
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "#") {
			end++
		}
		return strings.Join(lines[i:end], "\n")
	}
	return ""
}
