// Command crashchild is the crash child of the synthetic registry (enginetest.Registry), for the
// conformance test of the engine's own entities, as bitrixtest's testdata/crashchild is the
// catalog's; bitrixtest.ChildMain says what it runs and prints.
package main

import (
	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
)

func main() { bitrixtest.ChildMain(enginetest.Registry()) }
