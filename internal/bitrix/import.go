package bitrix

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

// importRecords sends one batch to the target and records each record's outcome. It returns the
// source ids that reached IMPORT_OK. It fails only when the run must stop: the database, or a
// request the target refused as a whole for a reason retrying cannot fix (a wrong token).
func (s *setter) importRecords(ctx context.Context, k kind, recs []Record) ([]string, error) {
	rf, err := loadRefs(ctx, s.e.Pool, k.name, recs)
	if err != nil {
		return nil, err
	}
	return s.send(ctx, k, recs, func(r Record) (json.RawMessage, error) { return payloadFor(k, r, rf) })
}

// send builds each record's payload, imports those that could be built in one call to
// import.<entity>.batch, and records every outcome: a record whose payload cannot be built
// (an unresolved reference) fails with that reason and is never sent half-mapped.
func (s *setter) send(ctx context.Context, k kind, recs []Record, build func(Record) (json.RawMessage, error)) ([]string, error) {
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
		results, err := s.e.Target.Import(ctx, k.name, items)
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
			return nil, fmt.Errorf("set %s: %w", k.name, err)
		}
	}
	return s.record(ctx, k, outs)
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
// their id map rows, failures to ERROR_RETRY (with the next retry's time) or IMPORT_ERR.
func (s *setter) record(ctx context.Context, k kind, outs []outcome) ([]string, error) {
	var imported []string
	var failures []failure
	err := pgx.BeginFunc(ctx, s.e.Pool, func(tx pgx.Tx) error {
		var err error
		if imported, err = s.recordSuccesses(ctx, tx, k, outs); err != nil {
			return err
		}
		failures = failures[:0]
		for _, o := range outs {
			if o.reason == "" {
				continue
			}
			f, moved, err := s.recordFailure(ctx, tx, k, o)
			if err != nil {
				return err
			}
			if moved {
				failures = append(failures, f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c := s.st.of(k.name)
	for _, o := range outs {
		if o.rec.Status == ErrorRetry {
			c.Retries++
			s.e.Metrics.RetryAttempts.WithLabelValues(k.name).Inc()
		}
	}
	c.Imported += len(imported)
	s.e.Metrics.ImportOK.WithLabelValues(k.name).Add(float64(len(imported)))
	s.e.Metrics.Processed.WithLabelValues(k.name, string(ImportOK)).Add(float64(len(imported)))
	for _, f := range failures {
		s.e.Metrics.Processed.WithLabelValues(k.name, string(f.to)).Inc()
		if f.to == ImportErr {
			c.Failed++
			s.e.Metrics.ImportErr.WithLabelValues(k.name).Inc()
		} else {
			c.Retry++
		}
		s.e.Log.Warn("record not imported", "entity", k.name, "source_id", f.o.rec.SourceID, "status", f.to,
			"cause", f.o.reason)
	}
	s.done += int64(len(imported) + len(failures))
	total := s.backlog
	s.e.progress("set", k.name, s.done, &total, int(s.done), s.start)
	return imported, nil
}

// recordSuccesses moves the records the target took to IMPORT_OK and maps their target ids. A
// record a get changed while its batch was on the way keeps its new payload in NEW, to be
// imported again.
func (s *setter) recordSuccesses(ctx context.Context, tx pgx.Tx, k kind, outs []outcome) ([]string, error) {
	sent := map[int64]outcome{}
	var ids []int64
	for _, o := range outs {
		if o.reason == "" {
			sent[o.rec.ID] = o
			ids = append(ids, o.rec.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, status, checksum FROM bitrix_records WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, fmt.Errorf("lock imported %s: %w", k.name, err)
	}
	byStatus := map[status.Status][]int64{}
	var id int64
	var st, sum string
	_, err = pgx.ForEachRow(rows, []any{&id, &st, &sum}, func() error {
		if o := sent[id]; o.rec.Status == status.Status(st) && o.rec.Checksum == sum {
			byStatus[o.rec.Status] = append(byStatus[o.rec.Status], id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock imported %s: %w", k.name, err)
	}
	var sids, tids, sums []string
	for from, ids := range byStatus {
		moved, err := Machine.MoveMany(ctx, tx, ids, from, ImportOK, status.Change{Actor: s.e.Actor, RunID: s.e.RunID, Attempt: true})
		if err != nil {
			return nil, err
		}
		for _, id := range moved {
			o := sent[id]
			sids, tids, sums = append(sids, o.rec.SourceID), append(tids, o.targetID), append(sums, o.rec.Checksum)
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO bitrix_id_map (entity, source_id, target_id, checksum)
SELECT $1, s, t, c FROM unnest($2::text[], $3::text[], $4::text[]) AS u(s, t, c)
ON CONFLICT (entity, source_id) DO UPDATE SET target_id = EXCLUDED.target_id, checksum = EXCLUDED.checksum, imported_at = now()`,
		k.name, sids, tids, sums)
	if err != nil {
		return nil, fmt.Errorf("map imported %s: %w", k.name, err)
	}
	return sids, nil
}

// recordFailure moves a record that failed: to ERROR_RETRY with its next retry scheduled while
// retries are left and the failure is retryable, otherwise to IMPORT_ERR.
func (s *setter) recordFailure(ctx context.Context, tx pgx.Tx, k kind, o outcome) (failure, bool, error) {
	policy := s.e.retryPolicy()
	r := o.rec
	used := r.Retries
	if r.Status == New {
		used = 0 // a record back in NEW starts its retries afresh
	}
	to, reason := ImportErr, o.reason
	if o.retryable {
		if used < policy.MaxRetries() {
			to = ErrorRetry
		} else {
			reason = fmt.Sprintf("gave up after %d attempts: %s", used+1, o.reason)
		}
	}
	moved, err := Machine.Move(ctx, tx, r.ID, r.Status, to, status.Change{Reason: reason, Actor: s.e.Actor, RunID: s.e.RunID, Attempt: true})
	if err != nil || !moved {
		return failure{}, false, err
	}
	if to == ErrorRetry {
		next := s.e.now().Add(policy.Delay(used + 1))
		if _, err := tx.Exec(ctx, `UPDATE bitrix_records SET retries = $2, next_attempt_at = $3 WHERE id = $1`,
			r.ID, used+1, next); err != nil {
			return failure{}, false, fmt.Errorf("schedule retry of %s %s: %w", k.name, r.SourceID, err)
		}
	}
	o.reason = reason
	return failure{o, to}, true, nil
}
