package engine

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Phase runs one phase of an entity, both by their command names ("things", "get"). An unknown
// phase or entity is an error that lists the valid ones.
func (e *Engine) Phase(ctx context.Context, entity string, phase Phase) error {
	s, ok := phase.spec()
	if !ok {
		return fmt.Errorf("unknown bitrix phase %q (valid: %s, run)", phase, phaseList())
	}
	ent, err := e.registry.Command(entity)
	if err != nil {
		return err
	}
	return s.run(e, ctx, ent)
}

// Run runs every phase of the entity in order and stops at the first that fails; a verify that
// finds problems is a failure (ErrNotVerified).
func (e *Engine) Run(ctx context.Context, entity string) error {
	ent, err := e.registry.Command(entity)
	if err != nil {
		return err
	}
	for _, s := range phaseSpecs() {
		e.log.Info("phase started", "entity", ent.Name, "phase", string(s.phase))
		if err := s.run(e, ctx, ent); err != nil {
			return fmt.Errorf("bitrix %s %s: %w", ent.Name, s.phase, err)
		}
	}
	return nil
}

// StatusReport is what `ingest bitrix status` shows.
type StatusReport struct {
	Entities []EntityStatus `json:"entities"`
}

// EntityStatus is one entity's state: its records by status, the commonest failure reasons,
// its inventory (for top-level entities) and last verify.
type EntityStatus struct {
	Entity   string           `json:"entity"`
	ByStatus map[string]int64 `json:"by_status"`
	// Reasons are the most common reasons of records in IMPORT_ERR and ERROR_RETRY.
	Reasons []ReasonCount `json:"reasons,omitempty"`
	// NotMigrated names every record in IMPORT_ERR or ERROR_RETRY by its portal id, grouped by
	// status, reason and whether a person acknowledged it as a known exception.
	NotMigrated []NotMigrated `json:"not_migrated,omitempty"`
	// Deleted lists the records the portal deleted by portal id, by status: kept on the target
	// (DELETED_AT_SOURCE) or removed from it (DELETED_ON_TARGET).
	Deleted []DeletedRecords `json:"deleted,omitempty"`
	// Inventory is nil for children, which are read and verified with their parents.
	Inventory *Inventory `json:"inventory,omitempty"`
	// Fields counts the custom fields read, and how many the target has.
	Fields         int64 `json:"fields"`
	FieldsOnTarget int64 `json:"fields_on_target"`
	// Advice is what the entity says a person can do about its records not migrated.
	Advice []string `json:"advice,omitempty"`
	// Verified is the entity's VERIFIED flag, VerifiedAt when a clean verify set it. A child has no
	// verify of its own: its parent's verify covers it (counts, coverage per parent, every record
	// compared), so a child shows its parent's flag, and VerifiedWith names that parent.
	Verified     bool       `json:"verified"`
	VerifiedAt   *time.Time `json:"verified_at,omitempty"`
	VerifiedWith string     `json:"verified_with,omitempty"`
	// Waiting, for a child, counts its NEW records that wait for a parent not imported (nil when
	// none does): NEW, yet nothing for set to send until the parent is imported.
	Waiting *Waiting `json:"waiting,omitempty"`
	// GetRunID is the live run reading the entity's get pass now, when its pass is not complete:
	// the pass is in progress. Zero for a pass a run that ended left interrupted.
	GetRunID int64 `json:"get_run_id,omitempty"`
}

// NotMigrated is a group of records that share a status, a reason and an acknowledgement.
type NotMigrated struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	// Acknowledged is set for records a person accepted as known exceptions; AcknowledgedBy
	// and AcknowledgedReason are theirs (of the first record, when several were accepted apart).
	Acknowledged       bool     `json:"acknowledged"`
	AcknowledgedBy     string   `json:"acknowledged_by,omitempty"`
	AcknowledgedReason string   `json:"acknowledged_reason,omitempty"`
	IDs                []string `json:"ids"`
}

// ReasonCount is how many records of one status share one reason.
type ReasonCount struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	N      int64  `json:"n"`
}

// Report returns the state of every entity.
func (e *Engine) Report(ctx context.Context) (StatusReport, error) {
	counts, err := Machine.Counts(ctx, e.pool)
	if err != nil {
		return StatusReport{}, err
	}
	live, err := e.store().liveHolders(ctx, e.registry)
	if err != nil {
		return StatusReport{}, err
	}
	inventories := map[string]*Inventory{}
	var out StatusReport
	for _, ent := range e.registry.All() {
		name := ent.Name
		es := EntityStatus{Entity: name, ByStatus: map[string]int64{}}
		for _, st := range Machine.Statuses {
			es.ByStatus[string(st)] = 0
		}
		for _, c := range counts {
			if c.Scope == name {
				es.ByStatus[string(c.Status)] = c.N
			}
		}
		if es.Reasons, err = e.store().topReasons(ctx, name); err != nil {
			return out, err
		}
		if es.NotMigrated, err = e.store().notMigrated(ctx, name); err != nil {
			return out, err
		}
		if ent.Advice != nil {
			if es.Advice, err = ent.Advice(ctx, e.env(), ent); err != nil {
				return out, err
			}
		}
		if es.Deleted, err = e.store().deletedRecords(ctx, name); err != nil {
			return out, err
		}
		if ent.Fetch == nil { // a fetched child has no listing, pass or verify of its own
			inv, err := e.store().loadInventory(ctx, name)
			if err != nil {
				return out, err
			}
			es.Inventory = &inv
			inventories[name] = &inv
		}
		if err := e.reportState(ctx, ent, &es, inventories, live); err != nil {
			return out, err
		}
		if es.Fields, es.FieldsOnTarget, err = e.store().countFields(ctx, name); err != nil {
			return out, err
		}
		out.Entities = append(out.Entities, es)
	}
	return out, nil
}

// WriteText writes the report for people: per entity its counts by status, the commonest
// failure reasons, the inventory and the last verify.
func (r StatusReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, es := range r.Entities {
		fmt.Fprintf(tw, "%s\n", es.Entity)
		for _, st := range Machine.Statuses {
			fmt.Fprintf(tw, "  %s\t%d\n", st, es.ByStatus[string(st)])
		}
		for _, rc := range es.Reasons {
			fmt.Fprintf(tw, "  %s ×%d\t%s\n", rc.Status, rc.N, rc.Reason)
		}
		for _, d := range es.Deleted {
			fmt.Fprintf(tw, "  %s\t%s\n", d.Status, deletedNote(d))
		}
		if inv := es.Inventory; inv != nil {
			total := "unknown"
			if inv.SourceTotal != nil {
				total = strconv.FormatInt(*inv.SourceTotal, 10)
			}
			state := "complete"
			switch {
			case !inv.Complete && es.GetRunID != 0:
				state = fmt.Sprintf("in progress by run %d, after id %s", es.GetRunID, inv.Cursor)
			case !inv.Complete:
				state = "interrupted after id " + inv.Cursor
			}
			if inv.Pass == 0 {
				state = "never run"
			}
			if inv.Limit != nil {
				state += fmt.Sprintf(" (test_limit %d)", *inv.Limit)
			}
			fmt.Fprintf(tw, "  source\t%s rows; get pass %d %s, %d rows read\n", total, inv.Pass, state, inv.PassRows)
			fmt.Fprintf(tw, "  verified\t%s\n", strings.Replace(es.VerifiedState(), "yes, ", "yes, at ", 1))
			if inv.LastVerify != nil {
				fmt.Fprintf(tw, "  last verify\t%s: %s\n", inv.LastVerify.At.Format(time.RFC3339), inv.LastVerify.Summary())
			}
		}
		if es.Inventory == nil && es.VerifiedWith != "" {
			fmt.Fprintf(tw, "  verified\t%s\n", strings.Replace(es.VerifiedState(), "yes, ", "yes, at ", 1))
		}
		if s := es.WaitingState(); s != "" {
			fmt.Fprintf(tw, "  waiting\t%d NEW: %s\n", es.Waiting.Records, s)
		}
		if es.Fields > 0 {
			fmt.Fprintf(tw, "  custom fields\t%d read, %d on the target\n", es.Fields, es.FieldsOnTarget)
		}
		for _, a := range es.Advice {
			fmt.Fprintf(tw, "  advice\t%s\n", a)
		}
	}
	return tw.Flush()
}
