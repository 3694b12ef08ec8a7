package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

type bitrixPlanCmd struct {
	JSON bool `arg:"--json" help:"print JSON"`
}

// bitrixPlan asks the portal how large every registered entity is and prints what get will
// cost: records, HTTP calls and time at BITRIX_RATE. It reads only, takes no lock and records no
// run: it may be run at any time, even while a migration runs (its calls count against the
// same bucket).
func (app *app) bitrixPlan(ctx context.Context, c *bitrixCmd) error {
	rt, _ := rest.ParseRate(c.Rate) // checked before
	e, err := app.bitrixEngine(c, nil)
	if err != nil {
		return err
	}
	p, err := e.Plan(ctx, rt)
	if err != nil {
		return err
	}
	if c.Plan.JSON {
		return app.printJSON(p)
	}
	w := tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "ENTITY\tPASS\tRECORDS\tGET CALLS\tTIME AT "+p.Rate+"\tVERIFY CALLS\t")
	for _, ep := range p.Entities {
		records := "unknown"
		if ep.Records >= 0 {
			records = fmt.Sprint(ep.Records)
		}
		if ep.Pass == engine.PassDelta {
			records = fmt.Sprintf("%d of %s", ep.Changed, records)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\t\n", ep.Entity, ep.Pass, records, ep.Calls, seconds(ep.Seconds), ep.VerifyCalls)
	}
	fmt.Fprintf(w, "total\t\t\t%d\t%s\t%d\t\n", p.Calls, seconds(p.Seconds), p.VerifyCalls)
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(app.stdout)
	for _, ep := range p.Entities {
		fmt.Fprintf(app.stdout, "  %s: %s pass (%s); %s\n", ep.Entity, ep.Pass, ep.PassReason, ep.How)
	}
	fmt.Fprintf(app.stdout, "Times are calls at the drain rate (a bucket with room saves up to %d calls' worth); set, verify\n"+
		"and the target's own pace come on top. Asking took %d calls.\n", rt.Burst-1, p.PlanCalls)
	fmt.Fprintf(app.stdout, "A migration sends the portal %d calls (%s): get's, verify's counts, and this plan, which it makes first.\n",
		p.MigrateCalls, seconds(p.MigrateSeconds))
	return nil
}

func seconds(s float64) string {
	if s < 120 {
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%.1f min", s/60)
}
