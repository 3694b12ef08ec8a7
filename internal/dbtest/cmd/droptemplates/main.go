// Command droptemplates drops the template databases the tests made on the server named by
// TEST_DATABASE_URL (see dbtest.DropTemplates). `make test` runs it after every test process
// has ended when TEST_DATABASE_URL names a server of the user's; a throwaway cluster goes away
// whole instead.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

func main() {
	url := os.Getenv(dbtest.EnvURL)
	if url == "" {
		fmt.Fprintln(os.Stderr, "droptemplates: "+dbtest.EnvURL+" is not set")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names, err := dbtest.DropTemplates(ctx, url, dbtest.TemplatePrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "droptemplates:", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Fprintln(os.Stderr, "dropped test template", n)
	}
}
