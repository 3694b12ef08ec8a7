package main

import (
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
)

// bitrixPhaseHelp is the --help line of a phase of an entity, or of run, which runs them all.
func bitrixPhaseHelp(phase engine.Phase) string {
	if phase == "run" {
		return "all phases in order, stopping at the first that fails"
	}
	return phase.Help()
}

// bitrixTree is the `bitrix` command: c's options, status, plan, and one command per entity of
// the registry, each with its phases. A new entity gets its command, its --help line and its
// place in the list by being registered, without a line here; an entity whose phase takes flags
// of its own names them in c.entityFlags.
func bitrixTree(reg *engine.Registry, c *bitrixCmd) *cliCommand {
	phases := append(engine.Phases(), "run")
	flags := c.entityFlags()
	cmd := &cliCommand{name: "bitrix", options: c,
		help: "migrate a Bitrix24 portal entity by entity: " + strings.Join(reg.CommandNames(), "|") + " " + phaseNames(phases) + ", migrate, status or plan",
		subs: []*cliCommand{
			{name: "status", help: "per entity: records by status, inventory, verified flag, last verify report", options: c.Status},
			{name: "plan", help: "before the window: per entity the records on the portal, the calls get needs and their time at the rate", options: c.Plan},
			{name: "migrate", help: "every entity, every phase, in migration order, in one process under one rate limit; resumes, and stops at the first entity that does not verify", options: c.Migrate},
		}}
	for _, ent := range reg.Commands() {
		e := &cliCommand{name: ent.Name, help: ent.Help}
		for _, phase := range phases {
			e.subs = append(e.subs, &cliCommand{name: string(phase), help: bitrixPhaseHelp(phase), options: flags[ent.Name+" "+string(phase)]})
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
