package engine_test

import (
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/bitrixtest"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// syntheticChild is the crash child of the synthetic registry.
const syntheticChild = "github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest/testdata/crashchild"

// The conformance test takes any registry, not only the catalog: a synthetic entity with a child
// fetched with every page of it (teams and their members), killed in its get and set and rerun,
// ends as an uninterrupted migration does.
func TestSyntheticRegistryConforms(t *testing.T) {
	t.Parallel()
	bitrixtest.Conformance(t, syntheticChild, bitrixtest.Case{Registry: enginetest.Registry(), Entity: enginetest.Teams,
		Portal:        bitrixfake.Options{Users: 40, Groups: 16, Seed: 51, Latency: 50 * time.Millisecond},
		TargetLatency: 150 * time.Millisecond})
}
