package engine

import (
	"context"
	"fmt"
	"strings"
)

// Phase is one step of the single-pass model an entity goes through: its custom fields read and
// created, its records read, imported and verified. A Phase is a string so that a command line's
// word ("get") is one; ParsePhase tells a known one from a typo.
type Phase string

// The phases, in the order Run runs them.
const (
	// PhaseFieldsGet reads the entity's custom fields from the portal.
	PhaseFieldsGet Phase = "fields-get"
	// PhaseFieldsSet creates the custom fields the target lacks.
	PhaseFieldsSet Phase = "fields-set"
	// PhaseGet reads the entity's records from the portal into Postgres.
	PhaseGet Phase = "get"
	// PhaseSet imports the records read into the target.
	PhaseSet Phase = "set"
	// PhaseVerify compares the target with what was read and sets VERIFIED.
	PhaseVerify Phase = "verify"
)

// phaseSpec is what the engine knows of a phase: its --help line and how it runs on an entity.
// One table, so that a phase is added or described in one place.
type phaseSpec struct {
	phase Phase
	help  string
	// run runs the phase on a registered entity; a verify that finds problems fails with a
	// *notVerified (ErrNotVerified), which keeps the report for Migrate.
	run func(e *Engine, ctx context.Context, ent *Entity) error
}

// phaseSpecs lists the phases in the order Run runs them.
func phaseSpecs() []phaseSpec {
	return []phaseSpec{
		{PhaseFieldsGet, "read the entity's custom fields from the portal", func(e *Engine, ctx context.Context, ent *Entity) error {
			_, err := e.fieldsGet(ctx, ent)
			return err
		}},
		{PhaseFieldsSet, "create the missing custom fields on the target", func(e *Engine, ctx context.Context, ent *Entity) error {
			_, err := e.fieldsSet(ctx, ent)
			return err
		}},
		{PhaseGet, "page through the portal into Postgres (status NEW); resumes an interrupted pass", func(e *Engine, ctx context.Context, ent *Entity) error {
			_, err := e.get(ctx, ent)
			return err
		}},
		{PhaseSet, "import NEW and ERROR_RETRY records into the target", func(e *Engine, ctx context.Context, ent *Entity) error {
			_, err := e.set(ctx, ent)
			return err
		}},
		{PhaseVerify, "compare counts, coverage and every imported record with the target; set VERIFIED", func(e *Engine, ctx context.Context, ent *Entity) error {
			r, err := e.verify(ctx, ent)
			if err == nil && !r.Clean() {
				err = &notVerified{entity: ent.Name, report: r}
			}
			return err
		}},
	}
}

// Phases lists the phases in the order Run runs them.
func Phases() []Phase {
	specs := phaseSpecs()
	out := make([]Phase, len(specs))
	for i, s := range specs {
		out[i] = s.phase
	}
	return out
}

// ParsePhase returns the phase a command line names; an unknown one is an error that lists the
// valid ones.
func ParsePhase(s string) (Phase, error) {
	if _, ok := Phase(s).spec(); !ok {
		return "", fmt.Errorf("unknown bitrix phase %q (valid: %s)", s, phaseList())
	}
	return Phase(s), nil
}

// Help is the phase's --help line; empty for a string that is no phase.
func (p Phase) Help() string {
	s, _ := p.spec()
	return s.help
}

// String returns the phase's name as a command line gives it.
func (p Phase) String() string { return string(p) }

// spec returns the phase's entry of the table; ok is false for a string that is no phase.
func (p Phase) spec() (phaseSpec, bool) {
	for _, s := range phaseSpecs() {
		if s.phase == p {
			return s, true
		}
	}
	return phaseSpec{}, false
}

// phaseList is the phases joined for an error message.
func phaseList() string {
	var names []string
	for _, p := range Phases() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}
