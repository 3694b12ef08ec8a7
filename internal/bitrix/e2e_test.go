package bitrix_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

func TestRunMigratesUsersAndGroupsEndToEnd(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 300, Groups: 40, Seed: 7})
	e := v.engine()
	for _, entity := range bitrix.Catalog().CommandNames() {
		if err := e.Run(v.ctx, entity); err != nil {
			t.Fatalf("run %s: %v", entity, err)
		}
	}
	if s := v.target.Stats(); s.Duplicates != 0 || s.Failed != 0 {
		t.Errorf("target stats %+v", s)
	}
	members := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'group_members'`)
	for name, want := range map[string]float64{
		`records_extracted_total{entity=users}`:         300,
		`records_extracted_total{entity=groups}`:        40,
		`records_extracted_total{entity=group_members}`: float64(members),
		`records_import_ok_total{entity=users}`:         300,
		`records_import_ok_total{entity=groups}`:        40,
		`records_import_ok_total{entity=group_members}`: float64(members),
		`custom_fields_created_total{entity=users}`:     2,
	} {
		if got := v.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, phase := range []string{"get", "set", "verify"} {
		for _, entity := range bitrix.Catalog().CommandNames() {
			if _, ok := v.metrics.Snapshot()[`duration_ms{entity=`+entity+`,phase=`+phase+`}`]; !ok {
				t.Errorf("no duration_ms for %s %s", entity, phase)
			}
		}
	}

	rep, err := e.Report(v.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	// Compare words, not the alignment of the columns.
	text := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"users NEW 0 IMPORT_OK 300 IMPORT_ERR 0 ERROR_RETRY 0",
		"source 300 rows; get pass 1 complete, 300 rows read", "verified yes, at ",
		"clean: 300 on target of 300 expected", "custom fields 2 read, 2 on the target",
		"group_members NEW 0 IMPORT_OK " + strconv.Itoa(members)} {
		if !strings.Contains(text, want) {
			t.Errorf("status report lacks %q:\n%s", want, out.String())
		}
	}
}
