package bitrixtest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// A rerun after a complete migration reads what changed (a delta pass, docs/bitrix-delta.md)
// and sends only that. RerunCase proves of such a rerun what Case proves of one entity's first
// migration: killed anywhere and rerun, it ends where an uninterrupted rerun ends.

// RerunCase is the crash test of a whole migration's rerun after the portal changed.
type RerunCase struct {
	// Registry is the registry the Harness's child runs; every one of its commands is migrated,
	// in its order, by every run.
	Registry *engine.Registry
	// Portal is the fake portal both worlds read.
	Portal bitrixfake.Options
	// Change changes the portal (bitrixfake.Portal.Churn, say) after both worlds migrated it
	// once without interruption; the runs compared migrate the change.
	Change func(t *testing.T, p *bitrixfake.Portal)
	// PortalKills is how many times the killed world's child is killed at a method run of the
	// portal, aimed at random over the runs an uninterrupted rerun made, each before the portal
	// answers it (the child waits for that answer); 0 means 4. TargetKills is how many times it is
	// killed at a write of the target (an import batch or a delete) that the target applied and
	// has not answered, the moment a resend would import twice; 0 means 2.
	PortalKills, TargetKills int
	// Env is more of the child's environment, in every run of both worlds
	// ("BITRIX_DELETIONS=propagate").
	Env []string
}

// Rerun migrates the case's portal into two worlds without interruption, changes the portal,
// reruns the migration once in the first world and, in the second, kills the rerun at the aimed
// method runs of the portal and writes of the target, rerunning it after each kill, then runs it
// to its end. Both worlds must then hold the same records, statuses, id maps and inventories,
// and targets equal record for record (created and removed as often, no record twice), and one
// more set in the killed world must send nothing.
func (h *Harness) Rerun(t *testing.T, c RerunCase) {
	t.Helper()
	skip(t)
	if c.Registry == nil || c.Change == nil {
		t.Fatal("a rerun case needs a Registry and a Change")
	}
	portalRuns := &callKiller{}
	opts := c.Portal
	opts.Observe = portalRuns.observe
	portal := bitrixfake.New(opts)
	psrv := httptest.NewServer(portal)
	t.Cleanup(psrv.Close)
	webhook := psrv.URL + portal.WebhookPath()
	entities := c.Registry.CommandNames()
	rng := rand.New(rand.NewPCG(c.Portal.Seed, 35))
	wc := Case{Env: c.Env}
	ref, crashed := newWorld(t, wc), newWorld(t, wc)
	run := func(w *world, phases []string) *crashtest.Child { return w.start(t, h.bin, webhook, entities, phases) }

	for _, w := range []*world{ref, crashed} {
		if last, _ := run(w, nil).Run(t, "", 0, rng); last != "done" {
			t.Fatalf("the first migration ended after %q", last)
		}
	}
	c.Change(t, portal)

	// The uninterrupted rerun, counting what the kills aim at.
	portalRuns.count()
	writes := ref.writes.count()
	if last, _ := run(ref, nil).Run(t, "", 0, rng); last != "done" {
		t.Fatalf("the uninterrupted rerun ended after %q", last)
	}
	calls, writes := portalRuns.count(), ref.writes.count()-writes
	portalRuns.killedAt()
	if calls == 0 || writes == 0 {
		t.Fatalf("the uninterrupted rerun made %d method runs of the portal and %d writes of the target: "+
			"the change gives the kills nothing to land in", calls, writes)
	}

	// aimed runs the killed world's rerun with a killer armed at its at-th event, and reports
	// where the child was killed ("" when the run ended first: what was left took fewer) and how
	// many events the killer saw.
	aimed := func(k killer, at int) (string, int) {
		child := run(crashed, nil)
		k.arm(child.Pid(), at)
		code := child.Wait(t)
		seen, where := k.count(), k.killedAt()
		switch {
		case code == -1 && where != "":
			return where, seen
		case code != 0:
			t.Fatalf("the rerun ended with %d, not killed at %d of %d:\n%s", code, at, seen, child.Stderr())
		}
		return "", seen
	}
	// Each kill aims at a random point of its part of the uninterrupted rerun (a kill in each
	// quarter, say), portal and target kills in the order of those points, so that the target's
	// writes are cut while the rerun still has them to make.
	type aim struct {
		k     killer
		what  string
		of    int
		point float64 // where in the rerun, from 0 to 1
	}
	var aims []aim
	portalKills, targetKills := or(c.PortalKills, 4), or(c.TargetKills, 2)
	for i := range portalKills {
		aims = append(aims, aim{portalRuns, "portal method run", calls, (float64(i) + rng.Float64()) / float64(portalKills)})
	}
	for i := range targetKills {
		aims = append(aims, aim{crashed.writes, "target write", writes, (float64(i) + rng.Float64()) / float64(targetKills)})
	}
	slices.SortFunc(aims, func(a, b aim) int { return cmp.Compare(a.point, b.point) })
	var landed, spared []string
	for _, a := range aims {
		at := 1 + int(a.point*float64(a.of))
		where, seen := aimed(a.k, at)
		if where == "" && seen > 0 {
			// The rerun was done before: aim again within what a rerun makes now.
			spared = append(spared, fmt.Sprintf("%s %d of %d (the run made %d)", a.what, at, a.of, seen))
			at = 1 + rng.IntN(seen)
			where, seen = aimed(a.k, at)
		}
		if where != "" {
			landed = append(landed, fmt.Sprintf("%s %d of %d (%s)", a.what, at, a.of, where))
		} else {
			spared = append(spared, fmt.Sprintf("%s %d of %d (the run made %d)", a.what, at, a.of, seen))
		}
	}
	if last, _ := run(crashed, nil).Run(t, "", 0, rng); last != "done" {
		t.Fatalf("the final rerun ended after %q", last)
	}
	t.Logf("uninterrupted rerun: %d portal method runs, %d target writes; kills landed: %v; spared (the run was done "+
		"before them; a spared kill is aimed once more within what the run made): %v", calls, writes, landed, spared)
	if len(landed) < (portalKills+targetKills+1)/2 {
		t.Errorf("only %d of %d kills landed in the rerun", len(landed), portalKills+targetKills)
	}

	checkSameState(t, ref, crashed)
	if n := crashed.target.Stats().Duplicates; n != 0 {
		t.Errorf("%d duplicates on the target", n)
	}
	if r, k := ref.target.Stats(), crashed.target.Stats(); k.Created != r.Created || k.Deleted+k.Cascaded != r.Deleted+r.Cascaded {
		t.Errorf("the killed reruns' target created %d records and removed %d; the uninterrupted rerun's %d and %d",
			k.Created, k.Deleted+k.Cascaded, r.Created, r.Deleted+r.Cascaded)
	}
	for _, name := range c.Registry.Names() {
		want, got := ref.target.Records(name), crashed.target.Records(name)
		if len(got) != len(want) {
			t.Errorf("%s: the killed world's target holds %d records, the uninterrupted one's %d", name, len(got), len(want))
			continue
		}
		for i := range got {
			if g, w := got[i], want[i]; g.Key != w.Key || g.TargetID != w.TargetID || g.Checksum != w.Checksum || string(g.Payload) != string(w.Payload) {
				t.Errorf("%s: target record %s (%s) = %s, want %s (%s) %s", name, g.Key, g.TargetID, g.Payload, w.Key, w.TargetID, w.Payload)
				break
			}
		}
	}

	// Everything is on the target: one more set has nothing to send.
	before := crashed.target.Stats().Items
	if last, _ := run(crashed, []string{string(engine.PhaseSet)}).Run(t, "", 0, rng); last != "done" {
		t.Fatalf("set rerun ended after %q", last)
	}
	if sent := crashed.target.Stats().Items - before; sent != 0 {
		t.Errorf("a set after the killed reruns sent %d items; want none", sent)
	}
}

// callKiller is the portal's observer (bitrixfake.Options.Observe): it counts the methods the
// portal runs and, when armed, kills the child at one of them, before the portal answers it.
type callKiller struct {
	mu     sync.Mutex
	seen   int // method runs since the last arm or count
	at     int // the run to kill the child at (from 1); 0: none
	pid    int
	killed string // the method the child was killed at, since the last killedAt
}

// killer is what aims a kill: callKiller or writeKiller.
type killer interface {
	arm(pid, at int)
	count() int
	killedAt() string
}

func (k *callKiller) observe(method string, _ map[string]any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen++
	if k.at > 0 && k.seen == k.at {
		// The child is alive: it waits for this answer.
		_ = syscall.Kill(k.pid, syscall.SIGKILL)
		k.at, k.killed = 0, method
	}
}

// killedAt returns the method the child was last killed at, and forgets it.
func (k *callKiller) killedAt() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.killed
	k.killed = ""
	return m
}

// arm makes the at-th method run from now kill the child pid.
func (k *callKiller) arm(pid, at int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen, k.at, k.pid = 0, at, pid
}

// count disarms the killer and returns how many method runs it saw since the last arm or count.
func (k *callKiller) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.seen
	k.seen, k.at = 0, 0
	return n
}

// writeKiller stands before a world's target: it counts the writes (import batches and deletes)
// and, when armed, kills the child at one of them once the target applied it and before the
// answer leaves: the child never learns that it was stored.
type writeKiller struct {
	mu     sync.Mutex
	seen   int // writes since the last arm; never reset by count
	at     int // the write to kill the child at, counted from the arm (from 1); 0: none
	from   int // seen at the arm
	pid    int
	killed string // the method the child was killed at, since the last killedAt
}

// killedAt returns the target method the child was last killed at, and forgets it.
func (k *writeKiller) killedAt() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.killed
	k.killed = ""
	return m
}

// wrap puts the killer before the target's handler.
func (k *writeKiller) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".batch") && !strings.HasSuffix(r.URL.Path, ".delete") {
			next.ServeHTTP(w, r)
			return
		}
		k.mu.Lock()
		k.seen++
		kill := k.at > 0 && k.seen-k.from == k.at
		pid := k.pid
		if kill {
			k.at, k.killed = 0, path.Base(r.URL.Path)
		}
		k.mu.Unlock()
		if !kill {
			next.ServeHTTP(w, r)
			return
		}
		// Applied, not answered: the recorder keeps the answer from the child.
		next.ServeHTTP(httptest.NewRecorder(), r)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		http.Error(w, "killed", http.StatusServiceUnavailable)
	})
}

// arm makes the at-th write from now kill the child pid.
func (k *writeKiller) arm(pid, at int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.from, k.at, k.pid = k.seen, at, pid
}

// count disarms the killer and returns the writes it saw since the last arm (or, unarmed, ever).
func (k *writeKiller) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.seen - k.from
	k.at = 0
	return n
}
