package bitrixtest

import (
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// CatalogChild is the crash child of the catalog (bitrix.Catalog()): the command that runs the
// phases of its entities, for New. Built by import path, so that a test of any package can use it.
const CatalogChild = "github.com/ingest-dev/ingest/internal/bitrix/bitrixtest/testdata/crashchild"

// Case is one entity's conformance test.
type Case struct {
	// Registry is the registry the entity is in, the one the Harness's child runs (the catalog's
	// for CatalogChild): what the entity's command migrates and what must be migrated before it
	// are planned from it. Required: any registry can be conformance-tested, not only the
	// catalog.
	Registry *engine.Registry
	// Entity names the command under test ("deals"); its children are tested with it.
	Entity string
	// Portal is the fake portal both runs read. Keep it small: what a kill proves does not grow
	// with the data; but every member of the family must have records (see Empty), and a get or
	// set should span a few batches so that a kill can land between them.
	Portal bitrixfake.Options
	// GetKills and SetKills are how many times the child is killed in the entity's get and in
	// its set; 0 means 2. A kill aimed at a phase whose work earlier runs finished is spared.
	GetKills, SetKills int
	// Problems are the problems verify must report, exactly: one substring of each (a record
	// the portal serves that the target refuses by design, say); none means verify must be clean.
	Problems []string
	// Empty names members of the family the portal leaves without records, and so the target
	// too; every other member must have some, so that the test proves something of each.
	Empty []string
	// Env is more of the child's environment, in every run of both worlds
	// ("BITRIX_DELETIONS=propagate").
	Env []string
	// TargetLatency holds every answer of both worlds' targets back (targetfake.Options.Latency):
	// for an entity whose set is one or two calls, so that a kill aimed early in the set lands
	// in it however fast the machine is at that moment, not after it.
	TargetLatency time.Duration
	// TargetMethodLatency holds back the answers of the target's methods it names instead
	// (targetfake.Options.MethodLatency): for a set that is one call, a delete after a deletion,
	// without slowing every call of the prerequisites' runs.
	TargetMethodLatency map[string]time.Duration
	// Change, when set, changes the portal (records deleted, say) after both worlds migrated it
	// once without interruption; the runs compared, uninterrupted and killed, come after it, so
	// that the kills land in the work the change makes (a deletion pass and its propagation).
	Change func(p *bitrixfake.Portal)
	// ConfirmKills, with a Change that deletes records of an entity whose lister confirms its
	// unseen records by id (engine.Confirmer), kills the child that many times inside those asks
	// first, at a listing by id the portal received and has not answered: each killed get must have
	// completed its pass and concluded nothing. The get and set kills follow.
	ConfirmKills int
	// EachRun, when set, is called before every run of the entity's command that is compared (the
	// uninterrupted one, each killed one and the reruns, in both worlds): to arm a fault of the
	// portal for each pass, such as a page answered empty (bitrixfake.Portal.EmptyPageAfter).
	EachRun func(p *bitrixfake.Portal)
	// Check, when set, checks the killed world's database once it ended equal to the
	// uninterrupted one; query returns a query's rows as text, one string a row.
	Check func(t *testing.T, query func(q string, args ...any) []string)
}

// Harness runs conformance cases with one build of the crash child.
type Harness struct {
	bin string
}

// New builds the crash child, the command at the import path child (once, for every case the
// Harness runs; the binary lives in t's temporary directory, so t must outlive them: the parent
// of parallel subtests does). The child runs the phases of the entities of the cases' registry
// as testdata/crashchild (CatalogChild) runs the catalog's: it reads the database, portal,
// target, entities and phases from the BITRIX_CRASH_ variables and announces each phase
// (crashtest). It skips t under -short or without a test database server, before building.
func New(t testing.TB, child string) *Harness {
	t.Helper()
	skip(t)
	return &Harness{bin: crashtest.Build(t, child)}
}

// Conformance runs one case with a Harness of its own, built from child (New): for a test of a
// single entity.
func Conformance(t *testing.T, child string, c Case) {
	t.Helper()
	New(t, child).Conformance(t, c)
}

// skip skips the test under -short or without a test database server.
func skip(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("kills child processes for a while")
	}
	dbtest.ServerURL(t)
}

// Conformance migrates the case's entity without interruption, then again into a fresh database
// and target killing the child in the entity's get and set and rerunning it, and requires both
// to end equal and sound (the package's documentation says what is checked). The entity's
// prerequisites run first in both, as plain runs.
func (h *Harness) Conformance(t *testing.T, c Case) {
	t.Helper()
	skip(t)
	if c.Registry == nil {
		t.Fatalf("conformance case of %q has no Registry: name the registry its entity is in", c.Entity)
	}
	p, err := planOf(c.Registry, c.Entity)
	if err != nil {
		t.Fatal(err)
	}
	killer := &confirmKiller{next: c.Portal.Observe}
	opts := c.Portal
	opts.Observe = killer.observe
	portal := bitrixfake.New(opts)
	psrv := httptest.NewServer(portal)
	t.Cleanup(psrv.Close)
	webhook := psrv.URL + portal.WebhookPath()
	entity := []string{c.Entity}
	rng := rand.New(rand.NewPCG(c.Portal.Seed, 19))
	// compared starts a compared run of the entity's command (the phases given; all when none).
	compared := func(w *world, phases []string) *crashtest.Child {
		if c.EachRun != nil {
			c.EachRun(portal)
		}
		return w.start(t, h.bin, webhook, entity, phases)
	}

	ref, crashed := newWorld(t, c), newWorld(t, c)
	first := append(slices.Clone(p.before), c.Entity) // what the uninterrupted run migrates
	if c.Change != nil {
		// Both worlds hold the portal as it was; the compared runs migrate the change.
		for _, w := range []*world{ref, crashed} {
			if last, _ := w.start(t, h.bin, webhook, first, nil).Run(t, "", 0, rng); last != "done" {
				t.Fatalf("the first migration of %v ended after %q", first, last)
			}
		}
		c.Change(portal)
		first = entity
	}

	// The uninterrupted run the killed one must end up equal to.
	killer.count()
	if c.EachRun != nil {
		c.EachRun(portal)
	}
	took := ref.start(t, h.bin, webhook, first, nil).TimedPhases(t)
	asks := killer.count()

	if len(p.before) > 0 && c.Change == nil {
		if last, _ := crashed.start(t, h.bin, webhook, p.before, nil).Run(t, "", 0, rng); last != "done" {
			t.Fatalf("the run of %v ended after %q", p.before, last)
		}
	}
	if c.ConfirmKills > 0 {
		h.killConfirming(t, c, crashed, killer, asks, func() *crashtest.Child { return compared(crashed, nil) }, rng)
	}
	killedIn := h.kill(t, c, func() *crashtest.Child { return compared(crashed, nil) }, took, rng)
	if last, _ := compared(crashed, nil).Run(t, "", 0, rng); last != "done" {
		t.Fatalf("final run ended after %q", last)
	}
	t.Logf("%s: uninterrupted get %v, set %v; kills by phase: %v", c.Entity, took[c.Entity+" get"].Round(time.Millisecond),
		took[c.Entity+" set"].Round(time.Millisecond), killedIn)

	checkVerify(t, c, ref, crashed)
	checkTarget(t, c, p, ref, crashed)
	checkSameState(t, ref, crashed)
	if c.Check != nil {
		c.Check(t, func(q string, args ...any) []string { return crashed.rows(t, q, args...) })
	}

	// Everything is on the target: one more set has nothing to send.
	before := crashed.target.Stats().Items
	if last, _ := compared(crashed, []string{"set"}).Run(t, "", 0, rng); last != "done" {
		t.Fatalf("set rerun ended after %q", last)
	}
	if sent := crashed.target.Stats().Items - before; sent != 0 {
		t.Errorf("a rerun of %s set after the migration sent %d items; want none", c.Entity, sent)
	}
}

// kill runs the entity's command (start starts a run in the killed world) until the child has
// been killed the case's number of times in get and in set, and returns where the kills landed by
// phase.
func (h *Harness) kill(t *testing.T, c Case, start func() *crashtest.Child, took map[string]time.Duration, rng *rand.Rand) map[string]int {
	t.Helper()
	get, set := c.Entity+" get", c.Entity+" set"
	// Each kill aims at a random moment early in its phase (a small part of the phase's
	// uninterrupted time), so that the phase's work is cut several times before it is done.
	aims := append(slices.Repeat([]string{get}, or(c.GetKills, 2)), slices.Repeat([]string{set}, or(c.SetKills, 2))...)
	window := map[string]time.Duration{
		get: took[get]/time.Duration(or(c.GetKills, 2)+2) + time.Millisecond,
		set: took[set]/time.Duration(or(c.SetKills, 2)+2) + time.Millisecond,
	}
	// order is where a phase comes in a run of the command ("done" after every phase).
	all := phases()
	order := func(phase string) int {
		name, step, _ := strings.Cut(phase, " ")
		if name != c.Entity {
			return len(all)
		}
		return slices.Index(all, step)
	}
	killedIn, spared := map[string]int{}, map[string]int{}
	for kills, runs := 0, 0; kills < len(aims); runs++ {
		if runs > 3*len(aims) {
			t.Fatalf("after %d runs only %d of %d kills landed where aimed: %v", runs, kills, len(aims), killedIn)
		}
		aim := aims[kills]
		last, killed := start().Run(t, aim, window[aim], rng)
		if killed {
			killedIn[last]++
		}
		switch {
		case killed && (last == get || last == set):
			kills++
		case !killed || order(last) > order(aim):
			// The aimed phase ran to its end, so its work is done: the kills still aimed at it
			// could only land later.
			for kills < len(aims) && aims[kills] == aim {
				kills++
				spared[aim]++
			}
		}
	}
	if len(spared) > 0 {
		t.Logf("kills not made because their phase had no work left: %v", spared)
	}
	if killedIn[get] == 0 || killedIn[set] == 0 {
		t.Errorf("kills landed in %d gets and %d sets of %s; want both cut", killedIn[get], killedIn[set], c.Entity)
	}
	return killedIn
}

// or returns n, or def when n is 0.
func or(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}
