package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// outcome is what happened to one record of a batch.
type outcome struct {
	rec       Record
	targetID  string
	reason    string // empty on success
	retryable bool
}

// importRecords sends one batch to the target and records each record's outcome. It fails only when the run must stop: the database, or a
// request the target refused as a whole for a reason retrying cannot fix (a wrong token).
func (s *setter) importRecords(ctx context.Context, ent *Entity, recs []Record) error {
	rf, err := loadRefs(ctx, s.e.pool, ent, recs)
	if err != nil {
		return err
	}
	return s.send(ctx, ent, recs, func(r Record) (json.RawMessage, error) { return payloadFor(ent, r, rf) })
}

// send builds each record's payload, imports those that could be built in one call to
// import.<entity>.batch, and records every outcome: a record whose payload cannot be built
// (an unresolved reference) fails with that reason and is never sent half-mapped.
func (s *setter) send(ctx context.Context, ent *Entity, recs []Record, build func(Record) (json.RawMessage, error)) error {
	outs := make([]outcome, 0, len(recs))
	var items []importapi.Item
	var sent []int // index in outs of each item
	for _, r := range recs {
		payload, err := build(r)
		if err != nil {
			outs = append(outs, outcome{rec: r, reason: err.Error()})
			continue
		}
		items = append(items, importapi.Item{Key: r.IdempotencyKey(), Checksum: payloadChecksum(payload), Payload: payload})
		sent = append(sent, len(outs))
		outs = append(outs, outcome{rec: r})
	}
	if len(items) > 0 {
		results, err := s.e.target.Import(ctx, ent.Name, items)
		switch {
		case err == nil:
			for i, res := range results {
				o := &outs[sent[i]]
				if res.Error != nil {
					o.reason, o.retryable = res.Error.Error(), res.Error.Retryable
				} else {
					o.targetID = res.TargetID
				}
			}
		case importapi.IsRetryable(err) && ctx.Err() == nil:
			// The target may or may not have stored them: the keys make sending them again safe.
			for _, i := range sent {
				outs[i].reason, outs[i].retryable = err.Error(), true
			}
		default:
			return fmt.Errorf("set %s: %w", ent.Name, err)
		}
	}
	return s.record(ctx, ent, outs)
}

// payloadChecksum is the checksum sent with an item: the target compares it to decide whether a
// record it already holds changed.
func payloadChecksum(payload json.RawMessage) string {
	sum := sha256.Sum256(payload)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// failure is a record that did not reach IMPORT_OK in a batch, and where it went.
type failure struct {
	o  outcome
	to status.Status
}

// record stores the outcomes of one batch in one transaction: successes move to IMPORT_OK with
// their id map rows, failures through the machine's retry schedule to ERROR_RETRY (with the next
// attempt's time) or IMPORT_ERR.
func (s *setter) record(ctx context.Context, ent *Entity, outs []outcome) error {
	var imported int
	var failures []failure
	err := pgx.BeginFunc(ctx, s.e.pool, func(tx pgx.Tx) error {
		var err error
		if imported, err = s.recordSuccesses(ctx, tx, ent, outs); err != nil {
			return err
		}
		failures = failures[:0]
		for _, o := range outs {
			if o.reason == "" {
				continue
			}
			res, err := Machine.Fail(ctx, tx, o.rec.ID, o.rec.Status,
				status.Failure{Cause: o.reason, Retryable: o.retryable, Now: s.e.now(), Policy: s.e.retryPolicy},
				status.Change{Actor: s.e.actor, RunID: s.e.runID})
			if err != nil {
				return err
			}
			if res.Moved {
				o.reason = res.Reason
				failures = append(failures, failure{o, res.To})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	m := s.e.metrics
	retried := 0
	for _, o := range outs {
		if o.rec.Status == ErrorRetry {
			retried++
			m.RetryAttempts.WithLabelValues(ent.Name).Inc()
		}
	}
	m.ImportOK.WithLabelValues(ent.Name).Add(float64(imported))
	m.Processed.WithLabelValues(ent.Name, string(ImportOK)).Add(float64(imported))
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.st.of(ent.Name)
	c.Retries += retried
	c.Imported += imported
	for _, f := range failures {
		m.Processed.WithLabelValues(ent.Name, string(f.to)).Inc()
		if f.to == ImportErr {
			c.Failed++
			m.ImportErr.WithLabelValues(ent.Name).Inc()
		} else {
			c.Retry++
		}
		s.e.log.Warn("record not imported", "entity", ent.Name, "source_id", f.o.rec.SourceID, "status", f.to,
			"cause", f.o.reason)
	}
	s.done += int64(imported + len(failures))
	total := s.backlog
	s.e.progress("set", ent.Name, s.done, &total, int(s.done), s.start)
	return nil
}

// recordSuccesses moves the records the target took to IMPORT_OK and maps their target ids. A
// record a get changed while its batch was on the way keeps its new payload in NEW, to be
// imported again.
func (s *setter) recordSuccesses(ctx context.Context, tx pgx.Tx, ent *Entity, outs []outcome) (int, error) {
	sent := map[int64]outcome{}
	var ids []int64
	for _, o := range outs {
		if o.reason == "" {
			sent[o.rec.ID] = o
			ids = append(ids, o.rec.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	byStatus := map[status.Status][]int64{}
	err := NewStore(tx).lockImported(ctx, ent.Name, ids, func(id int64, st, sum string) {
		if o := sent[id]; o.rec.Status == status.Status(st) && o.rec.Checksum == sum {
			byStatus[o.rec.Status] = append(byStatus[o.rec.Status], id)
		}
	})
	if err != nil {
		return 0, err
	}
	var sids, tids, sums []string
	for from, ids := range byStatus {
		moved, err := Machine.MoveMany(ctx, tx, ids, from, ImportOK, status.Change{Actor: s.e.actor, RunID: s.e.runID, Attempt: true})
		if err != nil {
			return 0, err
		}
		for _, id := range moved {
			o := sent[id]
			sids, tids, sums = append(sids, o.rec.SourceID), append(tids, o.targetID), append(sums, o.rec.Checksum)
		}
	}
	if err := NewStore(tx).mapImported(ctx, ent.Name, sids, tids, sums); err != nil {
		return 0, err
	}
	return len(sids), nil
}
