package main

import (
	"context"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/run"
)

// bitrixPhaseHelp is the --help line of a phase of an entity, or of run, which runs them all.
func bitrixPhaseHelp(phase engine.Phase) string {
	if phase == "run" {
		return "all phases in order, stopping at the first that fails"
	}
	return phase.Help()
}

// bitrixPhaseNeeds is what a phase talks to: fields-get and get only to the portal, fields-set
// and set only to the target, verify and run to both.
func bitrixPhaseNeeds(phase string) bitrixNeeds {
	return bitrixNeeds{source: phase != "fields-set" && phase != "set", target: phase != "fields-get" && phase != "get"}
}

// bitrixTree is the `bitrix` command: c's options, status, plan, and one command per entity of
// the registry, each with its phases, every command with its behaviour. A new entity gets its
// command, its --help line, its flags (engine.Entity.Flags) and its place in the list by being
// registered, without a line here.
func bitrixTree(reg *engine.Registry, c *bitrixCmd) *cliCommand {
	phases := append(engine.Phases(), "run")
	// `bitrix migrate` owns every entity: it is the one command that migrates them all.
	every := func() []run.Owned {
		return []run.Owned{{Source: "bitrix", Machine: engine.Machine, Scopes: reg.Names()}}
	}
	cmd := &cliCommand{name: "bitrix", options: c,
		help: "migrate a Bitrix24 portal entity by entity: " + strings.Join(reg.CommandNames(), "|") + " " + phaseNames(phases) + ", migrate, status or plan",
		subs: []*cliCommand{
			{name: "status", help: "per entity: records by status, inventory, verified flag, last verify report", options: c.Status, act: &action{
				run: func(ctx context.Context, app *app) error { return app.bitrixStatus(ctx, c.Status.JSON) },
			}},
			{name: "plan", help: "before the window: per entity the records on the portal, the calls get needs and their time at the rate", options: c.Plan, act: &action{
				config: func(_ *args, r *redact.Redactor) error { return c.check("plan", bitrixNeeds{source: true}, r.Add) },
				run:    func(ctx context.Context, app *app) error { return app.bitrixPlan(ctx, c) },
			}},
			{name: "migrate", help: "every entity, every phase, in migration order, in one process under one rate limit; resumes, and stops at the first entity that does not verify", options: c.Migrate, act: &action{
				usage: func() error { return c.Migrate.check(reg) },
				config: func(_ *args, r *redact.Redactor) error {
					return c.check("migrate", bitrixNeeds{source: true, target: true}, r.Add)
				},
				run:      func(ctx context.Context, app *app) error { return app.bitrixMigrate(ctx, c) },
				recorded: true,
				records:  every,
			}},
		}}
	for _, ent := range reg.Commands() {
		// A `bitrix ENTITY PHASE` owns its entity and the entity's children (the members of a
		// parent), nothing else: every entity's CronJob publishes its own counts.
		var scopes []string
		for _, f := range reg.Family(ent) {
			scopes = append(scopes, f.Name)
		}
		family := func() []run.Owned { return []run.Owned{{Source: "bitrix", Machine: engine.Machine, Scopes: scopes}} }
		e := &cliCommand{name: ent.Name, help: ent.Help}
		for _, phase := range phases {
			do := func(ctx context.Context, e *engine.Engine) error { return e.Phase(ctx, ent.Name, phase) }
			if phase == "run" {
				do = func(ctx context.Context, e *engine.Engine) error { return e.Run(ctx, ent.Name) }
			}
			label := "bitrix " + ent.Name + " " + string(phase)
			node := &cliCommand{name: string(phase), help: bitrixPhaseHelp(phase), act: &action{
				config: func(_ *args, r *redact.Redactor) error {
					return c.check(string(phase), bitrixPhaseNeeds(string(phase)), r.Add)
				},
				run: func(ctx context.Context, app *app) error {
					return app.bitrixPhase(ctx, c, label, ent.Name, do)
				},
				recorded: true,
				records:  family,
			}}
			if flags := newEntityFlags(ent, string(phase)); flags != nil {
				node.options = flags.options()
				// The flags given, applied to a catalog of its own: a value the entity refuses is
				// a usage error before anything connects, and the run's engine gets them.
				node.act.usage = func() error {
					c.given = flags
					_, err := c.registry()
					return err
				}
			}
			e.subs = append(e.subs, node)
		}
		cmd.subs = append(cmd.subs, e)
	}
	return cmd
}

// phaseNames joins the phases for a --help line.
func phaseNames(phases []engine.Phase) string {
	names := make([]string, len(phases))
	for i, p := range phases {
		names[i] = string(p)
	}
	return strings.Join(names, "|")
}
