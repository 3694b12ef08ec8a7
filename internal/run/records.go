package run

import (
	"context"
	"slices"
	"time"

	"github.com/ingest-dev/ingest/internal/status"
)

// Owned is what a command owns of one state machine: at the end of each of its runs, whatever
// the outcome, the run counts those records by status into ingest_records. Each command
// publishes what it owns and nothing else, so a command that stopped running (a suspended
// CronJob) cannot keep another command's counts alive on the Pushgateway.
type Owned struct {
	// Source is the pipeline, the series' source label: what `ingest status SOURCE` takes.
	Source string
	// Machine is the state machine.
	Machine *status.Machine
	// Scopes limits a scoped machine to these values of its scope column (a Bitrix24 entity
	// and its children); every one of them is published, zero when it holds no record yet.
	// Nil is every value the table holds.
	Scopes []string
}

// ScopeLabel is the series' scope label for records of m in scope: the scope itself when m is
// the source's only machine ("users" for bitrix), otherwise the machine's name, with the scope
// after a slash when m has one ("social_posts", "social_enrichments/vision").
func (o Owned) ScopeLabel(scope string) string {
	switch {
	case o.Machine.Name == o.Source:
		return scope
	case scope == "":
		return o.Machine.Name
	}
	return o.Machine.Name + "/" + scope
}

// countRecords sets ingest_records for everything the command owns. A stopped run still counts:
// one GROUP BY per machine, bounded.
func countRecords(ctx context.Context, o Options, r *Run) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, own := range o.Records {
		counts, err := own.Machine.Counts(ctx, o.Pool)
		if err != nil {
			r.Log.Warn("records by status not counted for the metrics", "machine", own.Machine.Name, "error", err)
			return
		}
		seen := map[string]bool{}
		for _, c := range counts {
			if own.Scopes != nil && !slices.Contains(own.Scopes, c.Scope) {
				continue
			}
			seen[c.Scope] = true
			r.Metrics.RecordsByStatus.WithLabelValues(own.Source, own.ScopeLabel(c.Scope), string(c.Status)).Set(float64(c.N))
		}
		for _, scope := range own.Scopes {
			if seen[scope] {
				continue
			}
			for _, st := range own.Machine.Statuses {
				r.Metrics.RecordsByStatus.WithLabelValues(own.Source, own.ScopeLabel(scope), string(st)).Set(0)
			}
		}
	}
}
