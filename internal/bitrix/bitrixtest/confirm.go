package bitrixtest

import (
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ingest-dev/ingest/internal/crashtest"
)

// A complete ID-range pass does not conclude a deletion from what it did not see: it asks the
// portal for those records by id first (engine.Confirmer), after its last page, and only then
// marks the ones the portal no longer answers. Case.ConfirmKills kills the child inside those
// asks, at a listing by id the portal has received and not yet answered: such a get must conclude
// nothing, and a rerun (a new pass) must conclude what the uninterrupted run did.

// byID reports whether a method run is a listing by id: its filter is on the id itself, one id
// ("ID": 5, as tasks.task.list is asked) or a list of them ("@id", as crm.item.list is). A scan's
// pages filter on ">ID", never on the id.
func byID(params map[string]any) bool {
	for k, v := range params {
		filter, ok := v.(map[string]any)
		if !ok || !strings.EqualFold(k, "filter") {
			continue
		}
		for key := range filter {
			if strings.EqualFold(strings.TrimLeft(key, "@="), "id") {
				return true
			}
		}
	}
	return false
}

// confirmKiller is the portal's observer (bitrixfake.Options.Observe): it counts the listings by
// id and, when armed, kills the child at one of them, before the portal answers it.
type confirmKiller struct {
	mu   sync.Mutex
	seen int // listings by id since the last arm or count
	at   int // the listing by id to kill the child at (from 1); 0: none
	pid  int
	next func(method string, params map[string]any) // the case's own observer
}

func (k *confirmKiller) observe(method string, params map[string]any) {
	if k.next != nil {
		k.next(method, params)
	}
	if !byID(params) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen++
	if k.at > 0 && k.seen == k.at {
		// The child is alive: it waits for this answer.
		_ = syscall.Kill(k.pid, syscall.SIGKILL)
		k.at = 0
	}
}

// arm makes the at-th listing by id from now kill the child pid.
func (k *confirmKiller) arm(pid, at int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen, k.at, k.pid = 0, at, pid
}

// count disarms the killer and returns how many listings by id it saw since the last arm or count.
func (k *confirmKiller) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.seen
	k.seen, k.at = 0, 0
	return n
}

// killConfirming runs the entity's command in w c.ConfirmKills times, killing the child each time
// at one of the listings by id the uninterrupted run made (asks of them): from a random one on,
// each next in turn, so that every one is cut when there are as many kills (the first ask of a
// get may be the sample of a mass deletion, the others its confirmation), and requires
// each killed get to have completed its pass and concluded no deletion.
func (h *Harness) killConfirming(t *testing.T, c Case, w *world, k *confirmKiller, asks int, start func() *crashtest.Child,
	rng *rand.Rand) {
	t.Helper()
	if asks == 0 {
		t.Fatalf("the uninterrupted run of %s asked the portal for no record by id: the case proves nothing of a kill "+
			"while it confirms deletions", c.Entity)
	}
	var ats []int
	first := rng.IntN(asks)
	for i := range c.ConfirmKills {
		child := start()
		at := 1 + (first+i)%asks
		ats = append(ats, at)
		k.arm(child.Pid(), at)
		code := child.Wait(t)
		seen := k.count()
		if code != -1 {
			t.Fatalf("run %d of %s was not killed at its listing by id %d: it made %d, the uninterrupted run %d (exit code %d)",
				i+1, c.Entity, at, seen, asks, code)
		}
		state := w.rows(t, `SELECT i.get_complete::text || ' ' || (SELECT count(*) FROM bitrix_records r WHERE r.entity = i.entity
AND r.status IN ('DELETED_AT_SOURCE', 'DELETED_ON_TARGET')) FROM bitrix_inventory i WHERE i.entity = $1`, c.Entity)
		if len(state) != 1 || state[0] != "true 0" {
			t.Fatalf("run %d of %s, killed at its listing by id %d of %d: pass complete and records deleted %v; "+
				"want the pass complete and nothing concluded", i+1, c.Entity, at, asks, state)
		}
	}
	t.Logf("%s: %d gets killed while they confirmed their unseen records, at listings by id %v of %d, none concluded",
		c.Entity, c.ConfirmKills, ats, asks)
}
