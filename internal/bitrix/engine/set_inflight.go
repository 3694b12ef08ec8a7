package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/status"
)

// countUnfinished records, as the set of ent starts, every batch attempt an earlier set started
// and never finished as a failed attempt at each of its records (status.Machine.FailUnfinished):
// the process died during the import call (killed, out of memory, node lost). A record that
// kills the process every time ends in IMPORT_ERR after the schedule's attempts, saying so,
// instead of stopping every later set.
func (s *setter) countUnfinished(ctx context.Context, ent *Entity) error {
	out, err := Machine.FailUnfinished(ctx, s.e.pool, status.UnfinishedParams{Statuses: pending, ScopeValue: ent.Name,
		Now: s.e.now(), Policy: s.e.retryPolicy}, status.Change{Actor: s.e.actor, RunID: s.e.runID})
	if err != nil {
		return err
	}
	c := s.st.of(ent.Name)
	for _, u := range out {
		c.Unfinished++
		if u.To == ImportErr {
			c.Failed++
		} else {
			c.Retry++
		}
		s.e.metrics.Processed.WithLabelValues(ent.Name, string(u.To)).Inc()
	}
	for _, b := range unfinishedBatches(out) {
		s.e.log.Warn("import batch of an earlier run never finished: the process died during it; each record counts a failed attempt",
			"entity", ent.Name, "run_id", b.runID, "started_at", b.startedAt, "records", len(b.ids),
			"retry", b.retry, "import_err", b.failed, "ids", logIDs(b.ids), "reason", b.reason)
	}
	return nil
}

// attempt imports one batch (fn) as an attempt at each of its records. A record whose last
// attempt died with its process goes in a batch of its own, in its place in the order: if it
// kills the process again, the death is counted against it alone, not its batch-mates.
func (s *setter) attempt(ctx context.Context, recs []Record, fn func([]Record) error) error {
	died, err := Machine.DiedDuring(ctx, s.e.pool, recordIDs(recs))
	if err != nil {
		return err
	}
	var batch []Record
	for _, r := range recs {
		if !slices.Contains(died, r.ID) {
			batch = append(batch, r)
			continue
		}
		for _, b := range [][]Record{batch, {r}} {
			if err := s.attemptBatch(ctx, b, fn); err != nil {
				return err
			}
		}
		batch = nil
	}
	return s.attemptBatch(ctx, batch, fn)
}

// attemptBatch imports one batch (fn) as an attempt at each of its records, its start committed
// in one statement before the import call. Records no longer waiting for set are left out. A
// stop or an error ends the attempts unrecorded (they are not the records' fault); so does an
// outcome that leaves a record where it was (a get changed it while its batch was on the way).
func (s *setter) attemptBatch(ctx context.Context, recs []Record, fn func([]Record) error) error {
	if len(recs) == 0 {
		return nil
	}
	started, err := Machine.StartAttempts(ctx, s.e.pool, recordIDs(recs), pending, s.e.runID)
	if err != nil {
		return err
	}
	kept := make([]Record, 0, len(started))
	for _, r := range recs {
		if slices.Contains(started, r.ID) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	if err := fn(kept); err != nil {
		if aerr := Machine.AbandonAttempts(ctx, s.e.pool, started); aerr != nil {
			s.e.log.Warn("attempts left open after the stop; the next set counts them", "ids", started, "error", aerr)
		}
		return err
	}
	return Machine.EndAttempts(ctx, s.e.pool, started)
}

func recordIDs(recs []Record) []int64 {
	ids := make([]int64, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

// unfinishedBatch is the records of one import call a dead process left open: one run, one
// start (StartAttempts starts a batch in one statement).
type unfinishedBatch struct {
	runID         int64
	startedAt     time.Time
	ids           []int64
	retry, failed int
	reason        string // the first record's: they differ in their attempt counts at most
}

// unfinishedBatches gathers unfinished attempts by batch, in the order they come, so that a
// rerun after a kill logs a line per batch in flight rather than one per record.
func unfinishedBatches(out []status.Unfinished) []*unfinishedBatch {
	var batches []*unfinishedBatch
	for _, u := range out {
		i := slices.IndexFunc(batches, func(b *unfinishedBatch) bool {
			return b.runID == u.RunID && b.startedAt.Equal(u.StartedAt)
		})
		if i < 0 {
			batches = append(batches, &unfinishedBatch{runID: u.RunID, startedAt: u.StartedAt, reason: u.Reason})
			i = len(batches) - 1
		}
		b := batches[i]
		b.ids = append(b.ids, u.ID)
		if u.To == ImportErr {
			b.failed++
		} else {
			b.retry++
		}
	}
	return batches
}

// maxLoggedIDs bounds the ids a summary line lists; the rest are counted.
const maxLoggedIDs = 20

// logIDs is ids for a log line: all of them, or the first maxLoggedIDs and how many more.
func logIDs(ids []int64) string {
	var b strings.Builder
	for i, id := range ids {
		if i == maxLoggedIDs {
			fmt.Fprintf(&b, " and %d more", len(ids)-maxLoggedIDs)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}
