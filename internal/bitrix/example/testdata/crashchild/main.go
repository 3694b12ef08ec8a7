// Command crashchild is the crash child of the worked example's registry (example.Registry: the
// catalog plus departments), for its conformance test, as bitrixtest's testdata/crashchild is the
// catalog's; bitrixtest.ChildMain says what it runs and prints.
package main

import (
	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/bitrix/example"
)

func main() { bitrixtest.ChildMain(example.Registry()) }
