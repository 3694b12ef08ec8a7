package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/importapi"
)

// verifyChunk is how many records verifyAll loads and builds payloads for at a time.
const verifyChunk = 500

// targetEntry is what the target's listing says it holds under one key.
type targetEntry struct {
	targetID, hash string
}

// verifyAll compares every IMPORT_OK record of ent with the target, not a sample: it pages
// through import.<ent>.list (key, target id, content hash), computes the content hash of what set
// would send for each record now, fetches only the records whose hashes differ, and diffs those
// field by field. A hash that differs only because the target canonicalises JSON another way
// yields no field difference and is not reported. Cost: the listing's pages, plus one get per
// 100 differing records.
func (e *Engine) verifyAll(ctx context.Context, ent *Entity, r *VerifyReport) error {
	// Its two steps each log their progress (stepProgress) against the records imported: what the
	// target should list, and what is compared.
	byStatus, _, err := e.store().countByStatus(ctx, ent.Name)
	if err != nil {
		return fmt.Errorf("verify %s: %w", ent.Name, err)
	}
	imported := byStatus[string(ImportOK)]
	onTarget := map[string]targetEntry{}
	listing := e.stepProgress("target listing", ent.Name, imported)
	for cursor := ""; ; {
		items, next, err := e.target.List(ctx, ent.Name, cursor, importapi.MaxListItems)
		if err != nil {
			return fmt.Errorf("verify %s: list the target: %w", ent.Name, err)
		}
		for _, it := range items {
			onTarget[it.Key] = targetEntry{it.TargetID, it.ContentHash}
		}
		listing.add(len(items))
		if next == "" {
			break
		}
		cursor = next
	}
	var suspects []Record
	var wants = map[string][]byte{}
	listing.end()
	compared := e.stepProgress("compare", ent.Name, imported)
	err = e.store().eachImported(ctx, ent.Name, func(recs []Record) error {
		defer compared.add(len(recs))
		rf, err := loadRefs(ctx, e.pool, ent, recs)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			r.Checked++
			key := rec.IdempotencyKey()
			got, held := onTarget[key]
			delete(onTarget, key)
			if !held {
				if r.countMismatch(ent.Name, rec.SourceID) {
					e.metrics.VerifyMismatch.WithLabelValues(ent.Name).Inc()
				}
				r.MissingCount++
				if len(r.Missing) < MaxListed {
					r.Missing = append(r.Missing, RecordIssue{Entity: ent.Name, SourceID: rec.SourceID, Status: string(rec.Status),
						Reason: "IMPORT_OK here, missing on the target"})
				}
				continue
			}
			want, err := payloadFor(ent, rec, rf)
			if err != nil {
				// Imported, yet its references no longer resolve (an id map row is gone).
				e.differs(ent, r, rec.SourceID, []Mismatch{{TargetID: got.targetID, Field: "*", Want: "a payload", Got: err.Error()}})
				continue
			}
			hash, err := importapi.ContentHash(want)
			if err != nil {
				return fmt.Errorf("verify %s %s: %w", ent.Name, rec.SourceID, err)
			}
			if hash != got.hash {
				suspects = append(suspects, rec)
				wants[key] = want
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	compared.end()
	if err := e.diffSuspects(ctx, ent, r, suspects, wants); err != nil {
		return err
	}
	if err := e.setAsideDeleted(ctx, ent, r, onTarget); err != nil {
		return err
	}
	e.extras(ctx, ent, r, onTarget)
	if r.MissingCount > 0 {
		r.Problem("%d %s are IMPORT_OK here but missing on the target", r.MissingCount, ent.noun())
	}
	if r.ExtraCount > 0 {
		r.Problem("the target holds %d %s that are not IMPORT_OK here", r.ExtraCount, ent.noun())
	}
	if r.DifferingCount > 0 {
		r.Problem("%d %s differ from the target", r.DifferingCount, ent.noun())
	}
	return nil
}

// diffSuspects fetches the records whose content hash differs and lists their differences.
func (e *Engine) diffSuspects(ctx context.Context, ent *Entity, r *VerifyReport, suspects []Record, wants map[string][]byte) error {
	if len(suspects) == 0 {
		return nil
	}
	shape, err := loadShape(ctx, e.pool, ent)
	if err != nil {
		return fmt.Errorf("verify %s: %w", ent.Name, err)
	}
	for len(suspects) > 0 {
		chunk := suspects[:min(len(suspects), importapi.MaxItems)]
		suspects = suspects[len(chunk):]
		keys := make([]string, len(chunk))
		for i, rec := range chunk {
			keys[i] = rec.IdempotencyKey()
		}
		items, _, err := e.target.GetByKeys(ctx, ent.Name, keys)
		if err != nil {
			return fmt.Errorf("verify %s: %w", ent.Name, err)
		}
		held := map[string]importapi.Record{}
		for _, it := range items {
			held[it.Key] = it
		}
		for _, rec := range chunk {
			it, ok := held[rec.IdempotencyKey()]
			if !ok { // gone between the listing and now
				e.differs(ent, r, rec.SourceID, []Mismatch{{Field: "*", Want: "the record", Got: "missing on the target"}})
				continue
			}
			diffs, err := diffPayloads(shape, wants[rec.IdempotencyKey()], it.Payload)
			if err != nil {
				return fmt.Errorf("verify %s %s: %w", ent.Name, rec.SourceID, err)
			}
			for i := range diffs {
				diffs[i].TargetID = it.TargetID
			}
			e.differs(ent, r, rec.SourceID, diffs)
		}
	}
	return nil
}

// differs records the field differences of one record, if there are any.
func (e *Engine) differs(ent *Entity, r *VerifyReport, sourceID string, diffs []Mismatch) {
	if len(diffs) == 0 {
		return
	}
	if r.countMismatch(ent.Name, sourceID) {
		e.metrics.VerifyMismatch.WithLabelValues(ent.Name).Inc()
	}
	r.DifferingCount++
	for _, d := range diffs {
		d.Entity, d.SourceID = ent.Name, sourceID
		if len(r.Differing) < MaxListed {
			r.Differing = append(r.Differing, d)
		}
	}
}

// extras lists what the target holds beyond the IMPORT_OK records: a record read here but not
// IMPORT_OK (an import whose answer was lost, not yet sent again) or one never read from the
// source at all.
func (e *Engine) extras(ctx context.Context, ent *Entity, r *VerifyReport, left map[string]targetEntry) {
	prefix := "source:" + ent.Name + ":"
	for _, key := range SortedKeys(left) {
		if r.countMismatch(ent.Name, strings.TrimPrefix(key, prefix)) {
			e.metrics.VerifyMismatch.WithLabelValues(ent.Name).Inc()
		}
		r.ExtraCount++
		if len(r.Extra) >= MaxListed {
			continue
		}
		issue := RecordIssue{Entity: ent.Name, SourceID: strings.TrimPrefix(key, prefix),
			Reason: fmt.Sprintf("on the target as %s (key %s), but never read from the source", left[key].targetID, key)}
		if rec, err := e.store().Record(ctx, ent.Name, issue.SourceID); err == nil {
			issue.Status = string(rec.Status)
			issue.Reason = fmt.Sprintf("on the target as %s, but %s here: run `ingest bitrix %s set`", left[key].targetID,
				rec.Status, verifiedAs(e.registry, ent))
		}
		r.Extra = append(r.Extra, issue)
	}
}
