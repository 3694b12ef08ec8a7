package engine_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

const chores = enginetest.Chores

// A record that names a parent of its own entity goes only once that parent is imported, within
// the same set, whatever their ids; what cannot go fails with the reason (its parent failed, or
// the two wait for each other), and goes again by itself once its parent can be imported.
func TestSetImportsSelfReferencedParentsFirst(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 30, Tasks: 200, Seed: 13})
	// Tasks that are visible, name no parent and are no one's parent: free to rearrange.
	infos := w.Portal.TaskInfos()
	parents := map[int]bool{}
	for _, ti := range infos {
		parents[ti.Parent] = true
	}
	var free []int
	hidden := map[int]bool{}
	for _, ti := range infos {
		hidden[ti.ID] = ti.Hidden
	}
	for _, ti := range infos {
		if !ti.Hidden && ti.Parent == 0 && !parents[ti.ID] {
			free = append(free, ti.ID)
		}
	}
	if len(free) < 4 {
		t.Fatalf("only %d free tasks", len(free))
	}
	a, b, p, c := free[0], free[1], free[2], free[3]
	id := strconv.Itoa
	w.Portal.SetTaskField(a, "parentId", id(b)) // a and b wait for each other
	w.Portal.SetTaskField(b, "parentId", id(a))
	w.Portal.SetTaskField(p, "createdDate", "31/02/1990") // p fails for good, c waits for it
	w.Portal.SetTaskField(c, "parentId", id(p))

	rec := &enginetest.RecordingTarget{Target: w.Client}
	e := w.Engine(func(e *engine.Config) { e.Target = rec })
	w.Migrate(e, people)
	w.Phases(e, chores, "get", "set")

	sent := map[string]int{} // portal id -> the import call that carried it
	for i, call := range rec.Calls() {
		for _, k := range call.Keys {
			if s, ok := strings.CutPrefix(k, "source:chores:"); ok {
				sent[s] = i
			}
		}
	}
	imported, ordered, before := 0, 0, 0 // before: children with a lower id than their parent
	for _, ti := range infos {
		if ti.Hidden {
			continue
		}
		r := w.Record(chores, id(ti.ID))
		if r.Status != engine.ImportOK {
			continue
		}
		imported++
		if ti.Parent != 0 && !hidden[ti.Parent] && ti.ID != c {
			ordered++
			if ti.ID < ti.Parent {
				before++
			}
			if sent[id(ti.Parent)] >= sent[id(ti.ID)] {
				t.Errorf("chore %d sent in call %d, its parent %d in call %d", ti.ID, sent[id(ti.ID)], ti.Parent, sent[id(ti.Parent)])
			}
		}
	}
	if imported == 0 || ordered == 0 || before == 0 {
		t.Fatalf("%d chores imported, %d with a parent, %d of them listed before it: the portal has no case to prove", imported, ordered, before)
	}
	for _, tt := range []struct {
		id     int
		reason string
	}{
		{a, "parentId " + id(b) + ": parent chore " + id(b) + " waits for its own parents in a cycle; neither can be imported first"},
		{b, "parentId " + id(a) + ": parent chore " + id(a) + " waits for its own parents in a cycle; neither can be imported first"},
		{p, "date field createdDate: cannot read \"31/02/1990\""},
		{c, "parentId " + id(p) + ": parent chore " + id(p) + " is IMPORT_ERR (date field createdDate: cannot read"},
	} {
		if r := w.Record(chores, id(tt.id)); r.Status != engine.ImportErr || !strings.Contains(r.LastError, tt.reason) {
			t.Errorf("chore %d: %s %q, want IMPORT_ERR %q", tt.id, r.Status, r.LastError, tt.reason)
		}
		if _, ok := sent[id(tt.id)]; ok {
			t.Errorf("chore %d reached the target", tt.id)
		}
	}

	// The parent is fixed on the portal: the next get reads it again, and set sends it and then
	// its child, which goes again by itself.
	w.Portal.SetTaskField(p, "createdDate", "2025-01-10T10:00:00+03:00")
	w.Phases(e, chores, "get", "set")
	for _, x := range []int{p, c} {
		if r := w.Record(chores, id(x)); r.Status != engine.ImportOK {
			t.Errorf("chore %d after its parent was fixed: %s %q, want IMPORT_OK", x, r.Status, r.LastError)
		}
	}
	calls := rec.Calls()
	if last := calls[len(calls)-1]; len(last.Keys) != 1 || last.Keys[0] != "source:chores:"+id(c) {
		t.Errorf("the last call sent %v, want the child alone, after its parent", last.Keys)
	}
}
