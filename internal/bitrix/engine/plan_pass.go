package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// The plan of a rerun: each entity's next get pass is full or delta (pass.go), decided as get
// will decide it from the inventory of its last pass, and costs what that kind of pass sends.
// A full pass costs what a first one does. A delta pass of an ID scan (IDScan.Modified) costs,
// per modification field, a filtered scan of what changed since the last complete pass (its
// first page counts it: the plan asks that count, one call per field), the ID-range counts
// that find deletions (50 ranges of rangeRows a call), and the children of the changed records
// only. Ranges whose count differs are listed again: the plan cannot know which before the
// pass, so it counts none.

// noDeltaReason is why an entity whose lister has no modification filter is read whole.
const noDeltaReason = "its listing has no modification filter: every pass reads it whole"

// PassPlan is the prediction of an ID scan's next pass.
type PassPlan struct {
	Decision PassDecision
	// Changed is how many records a delta pass reads (the portal's counts of the modified-since
	// filters, summed over the fields: a record modified in two counts twice); 0 for a full pass.
	Changed int64
	// Calls are the delta pass's own calls (the filtered scans and the range counts), without
	// the children's; How says what they are.
	Calls int
	How   string
	// Ahead is how many of the pass's requests (those of a full pass, or Calls) a rerun's
	// prefetch answers instead (prefetch.go): its bounds, and a delta's filtered scans' bounds
	// and ID-range counts. 0 when the plan is not of a rerun.
	Ahead int
}

// PlanPass predicts the next get pass of the scan's scope, n being the portal's count of its
// records: its kind and reason as begin will decide them (the portal's clock is checked when
// the pass starts, not here), and, for a delta pass, what it reads.
func (s *IDScan) PlanPass(ctx context.Context, env Env, ent *Entity, n int64) (PassPlan, error) {
	e := env.e
	in := passInput{}
	if len(s.Modified) == 0 {
		in.NoDelta = noDeltaReason
	}
	inv, err := e.store().peekInventory(ctx, s.scope(ent))
	if err != nil {
		return PassPlan{}, err
	}
	in.Inv = inv
	if in.Fingerprint, err = s.PassFingerprint(ctx, e, ent); err != nil {
		return PassPlan{}, err
	}
	p := PassPlan{Decision: e.decidePass(in)}
	if e.planAhead != nil { // the bounds, asked up front
		e.planAhead.Ask(1, false, 2)
		p.Ahead = 1
	}
	if !p.Decision.Delta() {
		return p, nil
	}
	counts, err := s.changedCounts(ctx, e, ent, p.Decision.Since)
	if err != nil {
		return PassPlan{}, err
	}
	var parts []string
	for _, f := range s.Modified {
		c := counts[f]
		p.Changed += c
		p.Calls += IDScanCalls(c)
		parts = append(parts, fmt.Sprintf(">%s: %d", f, c))
	}
	stored := max(inv.PassRows, n)
	ranges := CeilDiv(stored, rangeRows*rest.MaxBatch)
	p.Calls += 1 + ranges // the whole listing's bounds (the portal's clock), and the counts
	if e.planAhead != nil {
		// the filtered scans' bounds and the counts, asked up front
		e.planAhead.Ask(2, false, 2*len(s.Modified))
		e.planAhead.Ask(2, true, int(CeilDiv(stored, rangeRows)))
		p.Ahead += len(s.Modified) + int(ranges)
	}
	p.How = fmt.Sprintf("delta since %s: %s, each read by ID in ranges (its first page counts it); "+
		"%d call(s) of ID-range counts for deletions (50 ranges of %d a call); ranges that differ are listed again (not counted)",
		p.Decision.Since.Format(time.RFC3339), strings.Join(parts, ", "), ranges, rangeRows)
	return p, nil
}

// PassFingerprint is the fingerprint of what a pass of the scan reads with now: its method, its
// parameters and the custom fields it selects (IDScan.SelectCustom), with ExtractorVersion.
func (s *IDScan) PassFingerprint(ctx context.Context, e *Engine, ent *Entity) (string, error) {
	prepared, err := s.prepared(ctx, e, ent)
	if err != nil {
		return "", err
	}
	return prepared.fingerprint() // what begin records: the one definition of it
}

// changedCounts asks the portal how many records each modification field says changed after
// since: the total of the first page of the filtered listing, one call per field.
func (s *IDScan) changedCounts(ctx context.Context, e *Engine, ent *Entity, since time.Time) (map[string]int64, error) {
	filterParam := s.Scan.FilterParam
	if filterParam == "" {
		filterParam = "filter"
	}
	out := map[string]int64{}
	for _, f := range s.Modified {
		params := map[string]any{"start": 0}
		maps.Copy(params, s.Scan.Params)
		maps.Copy(params, s.CountParams)
		filter := map[string]any{}
		if given, ok := params[filterParam].(map[string]any); ok {
			maps.Copy(filter, given)
		}
		filter[">"+f] = DeltaSince(since)
		params[filterParam] = filter
		resp, err := e.source.Call(ctx, s.Scan.Method, params)
		if err != nil {
			return nil, fmt.Errorf("count the changes of %s by %s: %w", ent.Name, f, err)
		}
		if resp.Total == nil {
			return nil, fmt.Errorf("count the changes of %s by %s: %s reported no total", ent.Name, f, s.Scan.Method)
		}
		if out[f], err = estimated(countOf(ent, s.Scan.Method, resp, s.Scan.RowsPath)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeltaSince is a time as a delta pass's filter gives it: ISO 8601 with the offset, the form
// the portal's own dates take (2024-05-01T10:00:00+03:00).
func DeltaSince(t time.Time) string { return t.Format("2006-01-02T15:04:05-07:00") }

// peekInventory is the entity's inventory row, or an empty one when it has none: unlike
// loadInventory it creates none (a plan only reads).
func (s Store) peekInventory(ctx context.Context, entity string) (Inventory, error) {
	rows, err := s.db.Query(ctx, `SELECT `+inventoryColumns+` FROM bitrix_inventory WHERE entity = $1`, entity)
	if err != nil {
		return Inventory{}, fmt.Errorf("inventory of %s: %w", entity, err)
	}
	inv, err := pgx.CollectExactlyOneRow(rows, scanInventory)
	if errors.Is(err, pgx.ErrNoRows) {
		return Inventory{Entity: entity}, nil
	}
	if err != nil {
		return Inventory{}, fmt.Errorf("inventory of %s: %w", entity, err)
	}
	return inv, nil
}

// planFull marks a plan line without a pass of its own as a full pass, and why.
func planFull(ep *EntityPlan, reason string) {
	if ep.Pass == "" {
		ep.Pass, ep.PassReason = PassFull, reason
	}
}

// PassSummary merges the passes of several scans of one entity (the CRM processes, one per type):
// delta when all are, full with the first full one's reason otherwise.
func PassSummary(names []string, ds []PassDecision) (PassKind, string) {
	var full []string
	for i, d := range ds {
		if !d.Delta() {
			full = append(full, names[i]+": "+d.Reason)
		}
	}
	switch {
	case len(ds) == 0:
		return PassFull, "nothing to read"
	case len(full) == 0:
		return PassDelta, ds[0].Reason
	case len(full) == len(ds) && len(slices.Compact(reasonsOf(ds))) == 1:
		return PassFull, ds[0].Reason
	}
	return PassFull, strings.Join(full, "; ")
}

func reasonsOf(ds []PassDecision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Reason
	}
	return out
}

// CountByParent counts a child entity's stored records by their parent's source id: a plan of
// a walk that tops up what it stored (a chat's history) counts only what it has not.
func (s Store) CountByParent(ctx context.Context, child string) (map[string]int64, error) {
	return s.countByParent(ctx, child)
}

// lastPassPages is how many pages each key of a walk took in its last pass, when that pass
// completed (nil otherwise): a rerun of a walk whose keys start over reads as many again.
func (s Store) lastPassPages(ctx context.Context, entity string) (map[string]int, error) {
	inv, err := s.peekInventory(ctx, entity)
	if err != nil || inv.Pass == 0 || !inv.Complete {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT split_part(cursor, ' ', 1), count(*) FROM bitrix_page_log
WHERE entity = $1 AND pass = $2 GROUP BY 1`, entity, inv.Pass)
	if err != nil {
		return nil, fmt.Errorf("pages of %s's last pass: %w", entity, err)
	}
	out := map[string]int{}
	var key string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&key, &n}, func() error { out[key] = n; return nil }); err != nil {
		return nil, fmt.Errorf("pages of %s's last pass: %w", entity, err)
	}
	return out, nil
}

// walkCalls is how many calls a KeyWalk sends for keys of so many pages each, batched as its
// take does: up to a batch of commands, the next page of each key in queue order (chain pages of
// a key when few keys are left), keys not done going back to the end of the queue. One batch in
// flight at a time: concurrent batches share the queue, which changes little.
func walkCalls(pages []int, chain int) int {
	queue := slices.Clone(pages)
	calls := 0
	for len(queue) > 0 {
		per := 1
		if chain > 1 {
			per = min(max(rest.MaxBatch/len(queue), 1), chain)
		}
		var left []int
		cmds, i := 0, 0
		for ; i < len(queue) && cmds < rest.MaxBatch; i++ {
			sent := min(per, rest.MaxBatch-cmds)
			cmds += sent
			if queue[i] > sent {
				left = append(left, queue[i]-sent)
			}
		}
		queue = append(queue[i:], left...)
		calls++
	}
	return calls
}
