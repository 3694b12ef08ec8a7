package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// sourceReport is one pipeline's part of `ingest status`.
type sourceReport struct {
	Name    string          `json:"name"`
	Table   string          `json:"table"`
	Counts  []countJSON     `json:"counts"`
	Reasons []reasonJSON    `json:"reasons"`
	machine *status.Machine `json:"-"`

	// Listed is the records that need attention (or those of the statuses --status names), by
	// status and reason with their ids, up to --limit ids.
	Listed status.Listing `json:"listed"`
}

type countJSON struct {
	Scope  string             `json:"scope,omitempty"`
	Status string             `json:"status"`
	Count  int64              `json:"count"`
	Codes  []status.CodeTally `json:"reason_codes,omitempty"`
}

type reasonJSON struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

type runJSON struct {
	ID         int64              `json:"id"`
	Command    string             `json:"command"`
	StartedAt  time.Time          `json:"started_at"`
	FinishedAt *time.Time         `json:"finished_at"`
	Outcome    string             `json:"outcome"`
	Counters   map[string]float64 `json:"counters"`
	Error      string             `json:"error,omitempty"`
}

const recentRuns = 10

// status reports the records of machines by status, their most common failure reasons, the
// records that need attention (or are in the statuses c names) by id, and the last runs of
// commands (nil: of every command).
func (app *app) status(ctx context.Context, machines []*status.Machine, commands []string, c *statusCmd) error {
	asJSON := c.JSON
	var reports []sourceReport
	for _, m := range machines {
		rep := sourceReport{Name: m.Name, Table: m.Table, machine: m, Counts: []countJSON{}, Reasons: []reasonJSON{}}
		counts, err := m.Counts(ctx, app.pool)
		if err != nil {
			return err
		}
		codes, err := m.CodeCounts(ctx, app.pool)
		if err != nil {
			return err
		}
		byStatus := status.TallyCodes(codes)
		for _, c := range counts {
			rep.Counts = append(rep.Counts, countJSON{Scope: c.Scope, Status: string(c.Status), Count: c.N,
				Codes: byStatus[status.StatusKey{Scope: c.Scope, Status: c.Status}]})
		}
		reasons, err := m.TopReasons(ctx, app.pool, m.Attention, 5)
		if err != nil {
			return err
		}
		for _, r := range reasons {
			rep.Reasons = append(rep.Reasons, reasonJSON{Status: string(r.Status), Reason: r.Reason, Count: r.N})
		}
		if rep.Listed, err = m.List(ctx, app.pool, listedStatuses(m, c.Statuses), c.Limit); err != nil {
			return err
		}
		reports = append(reports, rep)
	}
	runs, err := run.Recent(ctx, app.pool, commands, recentRuns)
	if err != nil {
		return err
	}
	runsOut := make([]runJSON, len(runs))
	for i, r := range runs {
		runsOut[i] = runJSON(r)
	}
	if asJSON {
		return app.printJSON(map[string]any{"sources": reports, "runs": runsOut})
	}
	w := tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', 0)
	for _, rep := range reports {
		fmt.Fprintf(w, "%s (%s)\n", rep.Name, rep.Table)
		scoped := rep.machine.Scope != ""
		if scoped {
			fmt.Fprintf(w, "  %s\tSTATUS\tCOUNT\n", strings.ToUpper(rep.machine.Scope))
		} else {
			fmt.Fprintln(w, "  STATUS\tCOUNT")
		}
		for _, c := range rep.Counts {
			if scoped {
				fmt.Fprintf(w, "  %s\t%s\t%s\n", shown(c.Scope), c.Status, withCodes(c.Count, c.Codes))
			} else {
				fmt.Fprintf(w, "  %s\t%s\n", c.Status, withCodes(c.Count, c.Codes))
			}
		}
		writeListed(w, rep.machine, rep.Listed, len(c.Statuses) > 0)
		// The listing names the reasons with their records; these are for when it is empty.
		if len(rep.Reasons) > 0 && len(rep.Listed.Groups) == 0 {
			fmt.Fprintln(w, "  most common reasons:")
			for _, r := range rep.Reasons {
				fmt.Fprintf(w, "    %s\t%d\t%s\n", r.Status, r.Count, shownCut(r.Reason, 100))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "last runs")
	if len(runsOut) == 0 {
		fmt.Fprintln(w, "  (none yet)")
	} else {
		fmt.Fprintln(w, "  ID\tCOMMAND\tSTARTED (UTC)\tTOOK\tOUTCOME\tCOUNTERS / ERROR")
	}
	for _, r := range runsOut {
		took := "-"
		if r.FinishedAt != nil {
			took = r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
		}
		detail := formatCounters(r.Counters)
		if r.Error != "" {
			detail = shownCut(r.Error, 100)
		}
		fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\t%s\n", r.ID, shown(r.Command), r.StartedAt.UTC().Format("2006-01-02 15:04:05"), took, r.Outcome, detail)
	}
	return w.Flush()
}

// withCodes is a status's count followed by the reason codes its records carry, as every
// status report shows them: "3: attempt_unfinished 2, http_404 1" ("no code" counts the records
// without one, failures recorded before codes were kept). A count without codes stays a number.
func withCodes(n int64, codes []status.CodeTally) string {
	if len(codes) == 0 {
		return strconv.FormatInt(n, 10)
	}
	parts := make([]string, 0, len(codes)+1)
	coded := int64(0)
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s %d", c.Code, c.Count))
		coded += c.Count
	}
	if n > coded {
		parts = append(parts, fmt.Sprintf("no code %d", n-coded))
	}
	return fmt.Sprintf("%d: %s", n, strings.Join(parts, ", "))
}

// formatCounters shows a run's per-record outcomes compactly, e.g. "extracted=85
// extract_failed=2", from records_processed_total (prefixed by entity when a run touched several).
func formatCounters(c map[string]float64) string {
	type outcome struct{ entity, name string }
	got := map[outcome]float64{}
	entities := map[string]bool{}
	for k, v := range c {
		labels, ok := strings.CutPrefix(k, "records_processed_total{")
		if !ok || v == 0 {
			continue
		}
		var o outcome
		for _, kv := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
			name, val, _ := strings.Cut(kv, "=")
			switch name {
			case "entity":
				o.entity = val
			case "outcome":
				o.name = val
			}
		}
		got[o] += v
		entities[o.entity] = true
	}
	var parts []string
	for o, v := range got {
		name := o.name
		if len(entities) > 1 {
			name = o.entity + "." + name
		}
		parts = append(parts, fmt.Sprintf("%s=%g", name, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// resolveIDs turns the --id values into record ids: numbers as they are, or, with --entity, the
// source's own ids looked up in that entity. It returns the keys that match no record.
func (app *app) resolveIDs(ctx context.Context, m *status.Machine, entity string, keys []string) ([]int64, []string, error) {
	if entity == "" {
		ids := make([]int64, len(keys))
		for i, s := range keys {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				hint := ""
				if m.Key != "" {
					hint = fmt.Sprintf(" (to name %s records by the source's ids, add --entity)", m.Name)
				}
				return nil, nil, usageError{fmt.Sprintf("--id %q: not a record id%s", s, hint)}
			}
			ids[i] = id
		}
		return ids, nil, nil
	}
	if m.Key == "" {
		return nil, nil, usageError{fmt.Sprintf("--entity: %s records are named by id alone", m.Name)}
	}
	found, err := m.Resolve(ctx, app.pool, entity, keys)
	if err != nil {
		return nil, nil, err
	}
	var ids []int64
	var unknown []string
	for _, key := range keys {
		if id, ok := found[key]; ok {
			ids = append(ids, id)
		} else {
			unknown = append(unknown, key)
		}
	}
	return ids, unknown, nil
}

// check validates the flags the parser cannot: it runs before anything connects.
func (c *statusSetCmd) check(ps []*pipeline) error {
	m, err := c.machine(ps)
	if err != nil {
		return err
	}
	switch {
	case len(c.IDs) == 0:
		return usageError{"status set: --id is required (the records to change)"}
	case c.To == "":
		return usageError{"status set: --to is required (the new status)"}
	case strings.TrimSpace(c.Reason) == "":
		return usageError{"status set: --reason is required (why; it is kept in the status history)"}
	}
	if _, err := m.Parse(c.To); err != nil {
		return usageError{"status set --to: " + err.Error()}
	}
	_, err = signer("status set", c.By, "who is making the change", os.Getenv)
	return err
}

// signer is who signs a manual change: --by when it is given, $USER only when it is not. It
// refuses a change nobody signs: an empty --by (a name is wanted, and an empty one was given
// on purpose or by a variable that expanded to nothing), or no --by where $USER is unset
// (cron, containers), where the history would otherwise say "unknown".
func signer(command string, by *string, who string, getenv func(string) string) (string, error) {
	if by != nil {
		if name := strings.TrimSpace(*by); name != "" {
			return name, nil
		}
		return "", usageError{fmt.Sprintf("%s: --by was given empty: it wants a name (%s; kept in the status history); leave --by out to sign as $USER", command, who)}
	}
	if name := strings.TrimSpace(getenv("USER")); name != "" {
		return name, nil
	}
	return "", usageError{fmt.Sprintf("%s: --by NAME is required when $USER is not set (%s; kept in the status history)", command, who)}
}

// machineNamed finds the pipeline called name among ms, or says which names there are.
func machineNamed(name, command string, ms []*status.Machine) (*status.Machine, error) {
	var names []string
	for _, m := range ms {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return nil, usageError{fmt.Sprintf("%s: unknown source %q (known: %s)", command, name, strings.Join(names, ", "))}
}

// machine is the state machine whose records status set moves: the one named SOURCE, or, when
// SOURCE names a pipeline (`status social`, as `ingest status` takes it), that pipeline's only
// machine with the --to status.
func (c *statusSetCmd) machine(ps []*pipeline) (*status.Machine, error) {
	m, err := machineNamed(c.Source, "status set", machinesOf(ps))
	p := pipelineNamed(ps, c.Source)
	if err == nil || p == nil {
		return m, err
	}
	var with, names []string
	for _, pm := range p.machines {
		names = append(names, pm.Name)
		if _, perr := pm.Parse(c.To); perr == nil {
			m = pm
			with = append(with, pm.Name)
		}
	}
	switch {
	case c.To == "":
		return nil, usageError{fmt.Sprintf("status set: --to is required (the new status); it chooses among the %s machines: %s", c.Source, strings.Join(names, ", "))}
	case len(with) == 0:
		var valid []string
		for _, pm := range p.machines {
			for _, st := range pm.Statuses {
				valid = append(valid, string(st))
			}
		}
		return nil, usageError{fmt.Sprintf("status set --to: unknown %s status %q (valid: %s)", c.Source, c.To, strings.Join(valid, ", "))}
	case len(with) > 1:
		return nil, usageError{fmt.Sprintf("status set: %q is a status of several %s machines (%s): name one as SOURCE", c.To, c.Source, strings.Join(with, ", "))}
	}
	return m, nil
}

func (app *app) statusSet(ctx context.Context, c *statusSetCmd) error {
	m, err := c.machine(app.pipelines)
	if err != nil {
		return err
	}
	to, err := m.Parse(c.To)
	if err != nil {
		return usageError{"status set --to: " + err.Error()}
	}
	by, err := signer("status set", c.By, "who is making the change", os.Getenv)
	if err != nil {
		return err
	}
	ids, unknown, err := app.resolveIDs(ctx, m, c.Entity, c.IDs)
	if err != nil {
		return err
	}
	for _, key := range unknown {
		fmt.Fprintf(app.stdout, "%s %s %s: refused: no such record\n", m.Name, shown(c.Entity), shown(key))
	}
	results, err := m.SetManual(ctx, app.pool, ids, to, c.Reason, "manual: "+by)
	if err != nil {
		return err
	}
	name := recordNames(m, c.Entity, c.IDs, unknown, ids)
	refused := len(unknown)
	for _, r := range results {
		switch {
		case r.Err != nil:
			refused++
			fmt.Fprintf(app.stdout, "%s: refused: %s\n", shown(name(r.ID)), shown(r.Err.Error()))
		case r.From == to:
			fmt.Fprintf(app.stdout, "%s: already %s\n", shown(name(r.ID)), to)
		default:
			fmt.Fprintf(app.stdout, "%s: %s -> %s\n", shown(name(r.ID)), r.From, to)
		}
		app.log.Info("manual status change", "source", m.Name, "record", name(r.ID), "id", r.ID, "from", r.From, "to", to, "by", by, "reason", c.Reason, "refused", r.Err != nil)
	}
	if refused > 0 {
		app.log.Error(fmt.Sprintf("%d of %d records not changed", refused, len(c.IDs)), "refused", refused)
		return errReported
	}
	return nil
}

// check validates the flags the parser cannot: it runs before anything connects.
func (c *statusAckCmd) check() error {
	switch {
	case len(c.IDs) == 0:
		return usageError{"status ack: --id is required (the records to accept)"}
	case strings.TrimSpace(c.Reason) == "":
		return usageError{"status ack: --reason is required (why the record may stay unmigrated; it is kept in the status history)"}
	}
	_, err := signer("status ack", c.By, "who accepts the records", os.Getenv)
	return err
}

// statusAck accepts records as known exceptions: they stay in their failure status, and verify
// lists them apart instead of failing on them.
func (app *app) statusAck(ctx context.Context, c *statusAckCmd) error {
	var m *status.Machine
	var names []string
	for _, x := range app.machines() {
		if len(x.Acknowledgeable) == 0 {
			continue
		}
		names = append(names, x.Name)
		if x.Name == c.Source {
			m = x
		}
	}
	if m == nil {
		return usageError{fmt.Sprintf("status ack: %q records cannot be acknowledged (only: %s)", c.Source, strings.Join(names, ", "))}
	}
	by, err := signer("status ack", c.By, "who accepts the records", os.Getenv)
	if err != nil {
		return err
	}
	ids, unknown, err := app.resolveIDs(ctx, m, c.Entity, c.IDs)
	if err != nil {
		return err
	}
	for _, key := range unknown {
		fmt.Fprintf(app.stdout, "%s %s %s: refused: no such record\n", m.Name, shown(c.Entity), shown(key))
	}
	results, err := m.Acknowledge(ctx, app.pool, ids, c.Reason, "manual: "+by)
	if err != nil {
		return err
	}
	name := recordNames(m, c.Entity, c.IDs, unknown, ids)
	refused := len(unknown)
	for _, r := range results {
		if r.Err != nil {
			refused++
			fmt.Fprintf(app.stdout, "%s: refused: %s\n", shown(name(r.ID)), shown(r.Err.Error()))
		} else {
			fmt.Fprintf(app.stdout, "%s: %s, acknowledged as a known exception\n", shown(name(r.ID)), r.From)
		}
		app.log.Info("record acknowledged", "source", m.Name, "record", name(r.ID), "id", r.ID, "status", r.From, "by", by, "reason", c.Reason, "refused", r.Err != nil)
	}
	if refused > 0 {
		app.log.Error(fmt.Sprintf("%d of %d records not acknowledged", refused, len(c.IDs)), "refused", refused)
		return errReported
	}
	fmt.Fprintln(app.stdout, "the next verify lists these records apart and no longer fails on them")
	return nil
}

// listedStatuses are the statuses of m whose records `ingest status` lists by id: those asked
// for that m has, or by default those that need attention.
func listedStatuses(m *status.Machine, asked []string) []status.Status {
	if len(asked) == 0 {
		return m.Attention
	}
	var out []status.Status
	for _, s := range asked {
		if st, err := m.Parse(s); err == nil && !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

// checkListing refuses, before anything connects, a --status no machine of the report has and
// a negative --limit.
func (c *statusCmd) checkListing(command string, ms []*status.Machine) error {
	if c.Limit < 0 {
		return usageError{fmt.Sprintf("%s --limit: %d is not a number of ids (0 lists every one)", command, c.Limit)}
	}
	var valid []string
	for _, m := range ms {
		for _, st := range m.Statuses {
			if !slices.Contains(valid, string(st)) {
				valid = append(valid, string(st))
			}
		}
	}
	for _, s := range c.Statuses {
		if !slices.Contains(valid, s) {
			return usageError{fmt.Sprintf("%s --status: unknown status %q (valid: %s)", command, s, strings.Join(valid, ", "))}
		}
	}
	return nil
}

// writeListed writes a machine's records by status and reason with their ids, and how many
// the limit left out.
func writeListed(w io.Writer, m *status.Machine, l status.Listing, asked bool) {
	if len(l.Groups) == 0 {
		return
	}
	what := "needing attention"
	if asked {
		names := make([]string, len(l.Statuses))
		for i, s := range l.Statuses {
			names[i] = string(s)
		}
		what = "in " + strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "  records %s: %d, by status and reason, with their ids\n", what, l.Records)
	for _, g := range l.Groups {
		scope := ""
		if m.Scope != "" {
			scope = g.Scope + "\t"
		}
		reason := shownCut(g.Reason, 100)
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(w, "    %s%s\t%d\t%s\n", scope, g.Status, g.Count, reason)
		fmt.Fprintf(w, "      ids: %s\n", shownCut(strings.Join(g.IDs, " "), 2000))
	}
	if l.Unlisted > 0 {
		groups := ""
		if l.UnlistedGroups > 0 {
			groups = fmt.Sprintf(" in %d more groups", l.UnlistedGroups)
		}
		fmt.Fprintf(w, "    and %d more records%s: --limit N lists more, --limit 0 every one\n", l.Unlisted, groups)
	}
}
