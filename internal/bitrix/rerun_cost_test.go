package bitrix_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// demoPortal is the portal `ingest demo` serves (cmd/fakes' defaults), without its rate and
// latency and its Open Channel guests (no user of the portal: verify stops at them until someone
// accepts them): the rerun measurements of docs/bitrix-delta.md are made on it.
func demoPortal() bitrixfake.Options {
	return bitrixfake.Options{Seed: 1, Users: 500, Groups: 40, Chats: 60, MessagesPerChat: 60,
		Posts: 120, PostComments: 3, Tasks: 300, TaskComments: 4, Companies: 300, Contacts: 500, Deals: 1000,
		SmartItems: 200, Workflows: 10}
}

// methodCounter counts the methods the portal runs (each command of a batch on its own), by the
// phase of the entity the test runs at the time.
type methodCounter struct {
	mu    sync.Mutex
	at    string
	count map[string]map[string]int // "entity phase" -> method -> commands
}

func (m *methodCounter) observe(method string, _ map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.count == nil {
		m.count = map[string]map[string]int{}
	}
	if m.count[m.at] == nil {
		m.count[m.at] = map[string]int{}
	}
	m.count[m.at][method]++
}

func (m *methodCounter) set(at string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.at = at
}

// methods says which methods ran at a place, and how often.
func (m *methodCounter) methods(at string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m.count[at])) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m.count[at][k]))
	}
	return strings.Join(parts, " ")
}

// prefetchLine names, in migrationCost's figures, the requests of a rerun's prefetch.
const prefetchLine = "prefetch"

// migrationCost runs every phase of every command entity as `bitrix migrate` does (its plan
// aside) and returns the portal requests each entity's phases sent.
func migrationCost(v *env, mc *methodCounter, run string) map[string]map[engine.Phase]int64 {
	v.t.Helper()
	e := v.engine()
	out := map[string]map[engine.Phase]int64{}
	// A rerun asks its passes' first commands up front, as Migrate does (engine/prefetch.go):
	// those requests are the prefetch line's.
	mc.set(run + " " + prefetchLine + " " + string(engine.PhaseGet))
	before := v.source.Stats().Requests
	done, err := e.Prefetch(v.ctx, engine.MigrateOptions{})
	if err != nil {
		v.t.Fatalf("%s: prefetch: %v", run, err)
	}
	defer done()
	out[prefetchLine] = map[engine.Phase]int64{engine.PhaseGet: v.source.Stats().Requests - before}
	for _, ent := range bitrix.Catalog().Commands() {
		out[ent.Name] = map[engine.Phase]int64{}
		for _, p := range engine.Phases() {
			mc.set(run + " " + ent.Name + " " + string(p))
			before := v.source.Stats().Requests
			if err := e.Phase(v.ctx, ent.Name, p); err != nil {
				v.t.Fatalf("%s: %s %s: %v", run, ent.Name, p, err)
			}
			out[ent.Name][p] = v.source.Stats().Requests - before
		}
	}
	return out
}

// TestRerunCostPerEntity migrates the demo portal twice, nothing changed between, and logs what
// every entity's phases cost on the portal each time (docs/bitrix-delta.md's table). The rerun
// sends nothing to the target, costs no entity more than its first pass, and tops up no chat
// (every chat's last message is stored).
func TestRerunCostPerEntity(t *testing.T) {
	if testing.Short() {
		t.Skip("migrates a portal twice")
	}
	t.Parallel()
	mc := &methodCounter{}
	// make test migrates the demo's mix at a tenth (every entity has records, children and
	// two pages of deals): the bounds hold per entity whatever its size, and are tighter the
	// smaller the first pass. The figures of docs/bitrix-delta.md are the demo portal's
	// (BITRIX_LARGE_TESTS=1: a minute and a half of a busy machine under -race).
	opts := deltaPortalSmall
	if os.Getenv("BITRIX_LARGE_TESTS") != "" {
		opts = demoPortal()
	}
	opts.Observe = mc.observe
	v := newEnv(t, opts)
	first := migrationCost(v, mc, "first")
	sent := v.target.Stats()
	second := migrationCost(v, mc, "rerun")
	if after := v.target.Stats(); after.Created != sent.Created || after.Updated != sent.Updated || after.Deleted != sent.Deleted {
		t.Errorf("the rerun of an unchanged portal changed the target: %+v after the first run, %+v after the rerun", sent, after)
	}
	if got := mc.methods("rerun " + bitrix.Chats + " get"); strings.Contains(got, "im.dialog.messages.get") {
		t.Errorf("the rerun topped up chats whose last message is stored: %s", got)
	}
	total1, total2 := first[prefetchLine][engine.PhaseGet], second[prefetchLine][engine.PhaseGet]
	t.Logf("%-15s first %4d  rerun %4d: %s", prefetchLine, total1, total2, mc.methods("rerun "+prefetchLine+" "+string(engine.PhaseGet)))
	for _, ent := range bitrix.Catalog().Commands() {
		var a, b int64
		for _, p := range engine.Phases() {
			a += first[ent.Name][p]
			b += second[ent.Name][p]
		}
		total1, total2 = total1+a, total2+b
		// A delta pass has fixed requests (the bounds, one filtered scan per modification field,
		// the ID-range counts: four, per scan; the CRM processes have one scan per type, two
		// here): an entity whose whole listing took a request or two may cost a few more on a
		// rerun, and only that.
		if b > a+8 {
			t.Errorf("%s: the rerun sent %d requests, more than the first pass's %d and a delta's fixed ones", ent.Name, b, a)
		}
		t.Logf("%-15s first %4d (get %4d)  rerun %4d (get %4d, verify %3d)  rerun get: %s  rerun verify: %s", ent.Name, a,
			first[ent.Name][engine.PhaseGet], b, second[ent.Name][engine.PhaseGet], second[ent.Name][engine.PhaseVerify],
			mc.methods("rerun "+ent.Name+" "+string(engine.PhaseGet)), mc.methods("rerun "+ent.Name+" "+string(engine.PhaseVerify)))
	}
	t.Logf("every entity: first %d requests, rerun %d (%.1f%%)", total1, total2, 100*float64(total2)/float64(total1))
}
