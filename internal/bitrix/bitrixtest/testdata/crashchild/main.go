// Command crashchild is the crash child of the catalog (bitrix.Catalog) for the conformance tests
// (bitrixtest.Conformance, which kill it at random moments). It is built by those tests, without
// the race detector so that a run takes as long as it would in production; bitrixtest.ChildMain
// says what it runs and prints.
package main

import (
	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
)

func main() { bitrixtest.ChildMain(bitrix.Catalog()) }
