package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// MigrateOptions choose what Migrate runs.
type MigrateOptions struct {
	// Only, when set, limits the migration to these command entities (in the registry's order,
	// whatever order they are given in).
	Only []string
	// From, when set, starts the migration at this command entity: the ones before it are left
	// alone.
	From string
	// Rate is the portal's leaky bucket, for the plan's times; zero means rest.DefaultRate().
	Rate rest.Rate
}

// MigrateError is the error of a migration that stopped at an entity: the entity, where it
// stands in the migration, and the records that keep it from being verified. It wraps the
// phase's error (ErrNotVerified when verify found problems nobody acknowledged).
type MigrateError struct {
	Entity string
	Phase  Phase
	K, N   int
	// Records are the portal ids of the records that keep the entity from being verified, by
	// entity ("<entity> <portal id>", "<child> <parent id>:<n>"), up to MaxListed of them.
	Records []string
	// More counts the records not in Records.
	More int
	Err  error
}

func (e *MigrateError) Error() string {
	s := fmt.Sprintf("bitrix migrate stopped at %s (entity %d of %d), %s: %v", e.Entity, e.K, e.N, e.Phase, e.Err)
	if len(e.Records) > 0 {
		s += "; records that keep it from being verified: " + strings.Join(e.Records, ", ")
		if e.More > 0 {
			s += fmt.Sprintf(" and %d more (ingest bitrix status lists them all)", e.More)
		}
		s += "; fix them and rerun, or accept them with `ingest status ack bitrix --entity E --id ID... --reason ...`"
	}
	return s
}

func (e *MigrateError) Unwrap() error { return e.Err }

// ErrUnknownEntity is wrapped by Migrate's refusal of an entity name it does not know.
var ErrUnknownEntity = errors.New("unknown entity")

// MigrateEntities returns the command entities a migration with o runs, in the registry's
// order, or an error (wrapping ErrUnknownEntity) that lists the valid names.
func (r *Registry) MigrateEntities(o MigrateOptions) ([]*Entity, error) {
	valid := r.CommandNames()
	for _, name := range append(slices.Clone(o.Only), o.From) {
		if name != "" && !slices.Contains(valid, name) {
			return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownEntity, name, strings.Join(valid, ", "))
		}
	}
	var out []*Entity
	from := o.From == ""
	for _, ent := range r.Commands() {
		from = from || ent.Name == o.From
		if from && (len(o.Only) == 0 || slices.Contains(o.Only, ent.Name)) {
			out = append(out, ent)
		}
	}
	return out, nil
}

// Migrate runs every phase of every command entity of the registry (or those o selects) in the
// registry's order, which puts every entity after what it requires, and stops at the first
// phase that fails; a verify that finds problems nobody acknowledged is a failure
// (*MigrateError wrapping ErrNotVerified, naming the records).
//
// A rerun resumes where the last one stopped without being told: every phase already skips
// what is done and unchanged (get resumes an interrupted pass and leaves unchanged records
// alone, set sends only NEW and due ERROR_RETRY records, fields-set creates only missing
// fields), so an entity verified before whose get finds nothing new sends nothing to the
// target.
//
// Progress lines cover the whole migration: each entity starts and ends with one line giving
// its place ("entity k of n"), its records and the calls left to the end of the migration with
// their time at the rate, from `bitrix plan`; every line of the phases carries the place too.
func (e *Engine) Migrate(ctx context.Context, o MigrateOptions) error {
	ents, err := e.registry.MigrateEntities(o)
	if err != nil {
		return err
	}
	rate := o.Rate
	if rate.PerSecond <= 0 {
		rate = rest.DefaultRate()
	}
	rerun, err := e.isRerun(ctx, ents)
	if err != nil {
		return err
	}
	calls, records := map[string]int{}, map[string]int64{}
	if rerun {
		// The plan asks the portal a call or more per entity: on a rerun (a cutover's) those
		// calls would be a large share of what the delta passes send. `bitrix plan` still
		// predicts a rerun.
		e.log.Info("migration: a rerun, every entity's last get pass complete: no plan asked of the portal " +
			"(`ingest bitrix plan` predicts it); progress lines carry no ETA")
		done := e.prefetch(ctx, ents)
		defer done()
	} else {
		calls, records = e.migratePlan(ctx, rate, ents)
	}
	left := 0
	var recordsLeft int64
	for _, ent := range ents {
		for _, f := range e.registry.Family(ent) {
			left += calls[f.Name]
			recordsLeft += records[f.Name]
		}
	}
	var measured pace
	planned := func() []any { // the plan's figures, when there is a plan
		if rerun {
			return nil
		}
		return append([]any{"plan_calls_left", left}, measured.eta(float64(left)/rate.PerSecond, recordsLeft)...)
	}
	log, start := e.log, e.now()
	defer func() { e.log = log }()
	e.log.Info("migration started", append(append([]any{"entities", len(ents)}, planned()...), "rate", rate.String())...)
	for k, ent := range ents {
		place := fmt.Sprintf("%d of %d", k+1, len(ents))
		e.log = log.With("migrate_entity", place)
		var entCalls int
		var entRecords int64
		for _, f := range e.registry.Family(ent) {
			entCalls += calls[f.Name]
			entRecords += records[f.Name]
		}
		e.log.Info("migration: entity started", append(append([]any{"entity", ent.Name, "records_planned", entRecords},
			planned()...), "elapsed_s", round1(e.now().Sub(start).Seconds()))...)
		sent := e.stats()
		var beyondGet time.Duration
		for _, s := range phaseSpecs() {
			e.log.Info("phase started", "entity", ent.Name, "phase", string(s.phase))
			began := e.now()
			if err := s.run(e, ctx, ent); err != nil {
				err = fmt.Errorf("bitrix %s %s: %w", ent.Name, s.phase, err)
				merr := &MigrateError{Entity: ent.Name, Phase: s.phase, K: k + 1, N: len(ents), Err: err}
				var nv *notVerified
				if errors.As(err, &nv) {
					merr.Records, merr.More = named(nv.report)
				}
				return merr
			}
			if s.phase != PhaseGet {
				beyondGet += e.now().Sub(began)
			}
		}
		measured.add(ctx, e, ent, beyondGet)
		left = max(0, left-entCalls)
		recordsLeft = max(0, recordsLeft-entRecords)
		e.log.Info("migration: entity verified", append(append([]any{"entity", ent.Name, "calls_sent", e.stats() - sent},
			planned()...), "elapsed_s", round1(e.now().Sub(start).Seconds()))...)
	}
	log.Info("migration verified", "entities", len(ents), "elapsed_s", round1(e.now().Sub(start).Seconds()))
	return nil
}

// isRerun reports whether every command entity of ents has a complete get pass without a limit
// behind it: Migrate then asks the portal nothing for a plan.
func (e *Engine) isRerun(ctx context.Context, ents []*Entity) (bool, error) {
	for _, ent := range ents {
		inv, err := e.store().peekInventory(ctx, ent.Name)
		if err != nil {
			return false, err
		}
		if inv.Pass == 0 || !inv.Complete || inv.Limit != nil {
			return false, nil
		}
	}
	return len(ents) > 0, nil
}

// notVerified is a verify that found problems: ErrNotVerified, with the report (for Migrate's
// list of the records at fault).
type notVerified struct {
	entity string
	report VerifyReport
}

func (n *notVerified) Error() string {
	return fmt.Sprintf("%s: %v: %s", n.entity, ErrNotVerified, n.report.Summary())
}

func (n *notVerified) Unwrap() error { return ErrNotVerified }

// migratePlan is `bitrix plan`'s figures by entity (get's calls and the portal's records), for
// the migration's progress lines. A plan that cannot be made costs the lines their ETA, not
// the migration: it is logged and the figures are zero.
func (e *Engine) migratePlan(ctx context.Context, rate rest.Rate, ents []*Entity) (calls map[string]int, records map[string]int64) {
	calls, records = map[string]int{}, map[string]int64{}
	p, err := e.planOf(ctx, rate, ents)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("migration: no plan, so no ETA in the progress lines", "error", err)
		}
		return calls, records
	}
	for _, ep := range p.Entities {
		calls[ep.Entity] += ep.Calls
		if ep.Records > 0 {
			records[ep.Entity] += ep.Records
		}
	}
	e.log.Info("migration: plan made", "plan_calls", p.Calls, "plan_s", p.Seconds, "asking_calls", p.PlanCalls)
	return calls, records
}

// named lists the records verify's report names as keeping the entity from being verified
// (not imported, references without a target id, missing, extra or differing on the target),
// "entity id", each once, up to MaxListed, and how many more. Records out of the webhook user's
// reach and acknowledged ones are listed apart by verify and never fail it.
func named(r VerifyReport) (ids []string, more int) {
	seen := map[string]bool{}
	add := func(entity, id string) {
		key := entity + " " + id
		if seen[key] {
			return
		}
		seen[key] = true
		if len(ids) < MaxListed {
			ids = append(ids, key)
		} else {
			more++
		}
	}
	for _, list := range [][]RecordIssue{r.NotImported, r.UnresolvedRefs, r.Missing, r.Extra} {
		for _, i := range list {
			add(i.Entity, i.SourceID)
		}
	}
	for _, c := range r.Children {
		for _, i := range c.NotImported {
			add(i.Entity, i.SourceID)
		}
	}
	for _, c := range r.References {
		for _, u := range c.Unmapped {
			add(c.Entity, u.SourceID)
		}
	}
	for _, list := range [][]Mismatch{r.Differing, r.Mismatches} {
		for _, m := range list {
			add(m.Entity, m.SourceID)
		}
	}
	return ids, more
}
