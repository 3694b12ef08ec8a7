package bitrixtest

import (
	"slices"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// This file is all the helper asks of the engine's API (besides the child in
// testdata/crashchild, which runs the phases): what an entity's command migrates and what must
// be migrated before it.

// plan is what one entity's command migrates, and what must be migrated before it.
type plan struct {
	// family is the entity and its children: what its command reads, imports and verifies.
	family []string
	// before are the commands to run first, in migration order: those of every entity the
	// family requires or refers to, and theirs in turn.
	before []string
}

// planOf returns the plan of the entity's command in the registry.
func planOf(reg *engine.Registry, entity string) (plan, error) {
	ent, err := reg.Command(entity)
	if err != nil {
		return plan{}, err
	}
	var p plan
	for _, m := range reg.Family(ent) {
		p.family = append(p.family, m.Name)
	}
	needed := map[string]bool{}
	var need func(cmd *engine.Entity)
	need = func(cmd *engine.Entity) {
		for _, m := range reg.Family(cmd) {
			deps := slices.Clone(m.Requires)
			for _, r := range m.Refs {
				deps = append(deps, r.Entity)
			}
			for _, d := range deps {
				dep, ok := reg.Entity(d)
				if !ok {
					continue // NewRegistry refuses unknown entities: a registry has none
				}
				if dep.Parent != "" {
					dep, _ = reg.Entity(dep.Parent) // a child comes with its parent's command
				}
				if dep.Name != ent.Name && !needed[dep.Name] {
					needed[dep.Name] = true
					need(dep)
				}
			}
		}
	}
	need(ent)
	for _, c := range reg.CommandNames() {
		if needed[c] {
			p.before = append(p.before, c)
		}
	}
	return p, nil
}

// phases are the phases of one run of an entity's command, in order.
func phases() []string {
	var out []string
	for _, p := range engine.Phases() {
		out = append(out, string(p))
	}
	return out
}
