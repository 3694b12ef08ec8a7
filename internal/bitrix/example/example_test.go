package example

import (
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

func ExampleNewRegistry() {
	reg, err := engine.NewRegistry(append(bitrix.Catalog().All(), departmentsEntity(), departmentMembersEntity())...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.CommandNames())
	d, _ := reg.Entity("departments")
	for _, e := range reg.Family(d) {
		fmt.Print(e.Name, " ")
	}
	fmt.Println()
	// Output:
	// [users groups chats feed tasks crm_types crm_categories companies contacts deals deal_products crm_comments smart workflows departments]
	// departments department_members
}

// The command line applies a flag given to the entity the engine runs with; here by hand.
func Example_entityFlag() {
	reg, err := engine.NewRegistry(append(bitrix.Catalog().All(), departmentsEntity(), departmentMembersEntity())...)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := reg.Entity("departments")
	flag := d.Flags[0]
	fmt.Println("--"+flag.Name, flag.Phases, d.Refs[0].Optional)
	if err := flag.Set(d, "true"); err != nil {
		fmt.Println(err)
	}
	fmt.Println(d.Refs[0].Name, "optional:", d.Refs[0].Optional)
	// Output:
	// --headless-departments [set] false
	// head optional: true
}

// NewRegistry refuses a flag the command line could not offer.
func Example_childFlagRefused() {
	child := departmentMembersEntity()
	child.Flags = departmentsEntity().Flags
	_, err := engine.NewRegistry(append(bitrix.Catalog().All(), departmentsEntity(), child)...)
	fmt.Println(err)
	// Output: bitrix entity "department_members": a child has no command, so no flags of its own
}
