package example_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/bitrix/example"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// child is the crash child of the example's registry.
const child = "github.com/ingest-dev/ingest/internal/bitrix/example/testdata/crashchild"

// The worked example conforms: departments and their members, read from the fake portal's
// department.get and user.get by UF_DEPARTMENT, killed in their get and set and rerun, end as an
// uninterrupted migration does, verified clean. The departments nobody works in have no head:
// they go with --headless-departments (its variable), and parents first.
func TestDepartmentsConform(t *testing.T) {
	t.Parallel()
	bitrixtest.Conformance(t, child, bitrixtest.Case{Registry: example.Registry(), Entity: "departments",
		Portal: bitrixfake.Options{Users: 40, Departments: 30, Seed: 65},
		Env:    []string{"BITRIX_HEADLESS_DEPARTMENTS=true"}})
}
