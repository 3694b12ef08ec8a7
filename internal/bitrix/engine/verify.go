package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/importapi"
)

// Verify compares the entity on the target with the source and the database: counts, records
// left unimported (listed by id, acknowledged ones apart), for children their coverage per
// parent, the resolution of every reference, the entity's own checks, every IMPORT_OK record
// against the target's listing (verifyAll), and a random sample field by field besides. The
// report is stored; the entity's VERIFIED flag is set only when it is clean. Mismatches are
// counted in verify_sample_mismatch_total.
func (e *Engine) Verify(ctx context.Context, entity string) (VerifyReport, error) {
	ent, err := e.registry.Command(entity)
	if err != nil {
		return VerifyReport{}, err
	}
	return e.verify(ctx, ent)
}

// verify is Verify of a registered entity.
func (e *Engine) verify(ctx context.Context, ent *Entity) (VerifyReport, error) {
	defer e.metrics.Phase(ent.Name, "verify")()
	r := VerifyReport{Entity: ent.Name, At: e.now().UTC(), ByStatus: map[string]int64{}}
	family := e.registry.Family(ent)
	step := e.verifySteps(ent.Name)
	if err := e.listAcknowledged(ctx, family, &r); err != nil {
		return r, err
	}
	if err := e.verifyCounts(ctx, ent, &r); err != nil {
		return r, err
	}
	step("counts")
	for _, m := range family {
		if m.Fetch != nil || m.Walk != nil {
			if err := e.verifyChildren(ctx, m, &r); err != nil {
				return r, err
			}
		}
		if err := e.listUnreachable(ctx, m, &r); err != nil {
			return r, err
		}
		if err := e.verifyRefs(ctx, m, &r); err != nil {
			return r, err
		}
		step("coverage and references of " + m.Name)
	}
	if err := e.verifyFamily(ctx, family, &r); err != nil {
		return r, err
	}
	step("family")
	if ent.Verify != nil {
		if err := ent.Verify(ctx, e.env(), ent, &r); err != nil {
			return r, err
		}
		step("checks of " + ent.Name + "'s own")
	}
	if err := e.noteUncreatableFields(ctx, ent, &r); err != nil {
		return r, err
	}
	for _, m := range family {
		if err := e.verifyAll(ctx, m, &r); err != nil {
			return r, err
		}
		if err := e.verifySample(ctx, m, &r); err != nil {
			return r, err
		}
	}
	if err := e.countWaiting(ctx, family, &r); err != nil {
		return r, err
	}
	if r.MismatchedRecords > 0 {
		r.Problem("%d of %d sampled records differ from the target", r.MismatchedRecords, r.Sampled)
	}
	if err := e.store().saveVerify(ctx, ent.Name, r); err != nil {
		return r, err
	}
	if r.Clean() {
		e.log.Info("verify clean: entity VERIFIED", "entity", ent.Name, "summary", r.Summary())
	} else {
		e.log.Warn("verify found problems: entity not verified", "entity", ent.Name, "problems", r.Summary())
	}
	if r.UnreachableCount > 0 {
		e.log.Warn("records out of the webhook user's reach", "entity", ent.Name, "count", r.UnreachableCount)
	}
	return r, nil
}

// verifyCounts compares the portal's count, the target's count and the records' statuses.
func (e *Engine) verifyCounts(ctx context.Context, k *Entity, r *VerifyReport) error {
	total, fromRun, err := e.sourceTotal(ctx, k)
	if errors.Is(err, ErrNoTotal) {
		if k.CountRead {
			return e.verifyCountsRead(ctx, k, r)
		}
		return nil // the entity's own checks count it
	}
	if err != nil {
		return fmt.Errorf("verify %s: source count: %w", k.Name, err)
	}
	r.SourceCount = total
	if r.TargetCount, err = e.target.Count(ctx, k.Name); err != nil {
		return fmt.Errorf("verify %s: %w", k.Name, err)
	}
	counts, err := Machine.Counts(ctx, e.pool)
	if err != nil {
		return err
	}
	var records int64
	for _, c := range counts {
		if c.Scope == k.Name {
			r.ByStatus[string(c.Status)] = c.N
			records += c.N
		}
	}
	inv, err := e.store().loadInventory(ctx, k.Name)
	if err != nil {
		return err
	}
	acked, err := e.store().countExcused(ctx, k)
	if err != nil {
		return err
	}
	// The portal no longer has the records it deleted; the target holds those set has not removed.
	records -= deletedRecords(r.ByStatus)
	if fromRun && inv.Limit == nil && records != total {
		// The portal changed while the get read it (a record added after its count was taken, and
		// read): only the portal's count now tells a missed record from that.
		switch now, err := k.Lister.Total(ctx, e.env(), k); {
		case err == nil:
			total, r.SourceCount = now, now
		case !errors.Is(err, ErrNoTotal):
			return fmt.Errorf("verify %s: source count: %w", k.Name, err)
		}
	}
	kept, err := e.store().keptOnTarget(ctx, k.Name)
	if err != nil {
		return err
	}
	r.Expected = r.SourceCount - acked + kept
	if inv.Limit != nil {
		r.TestLimit = inv.Limit
		r.Expected = records - acked + kept
	}
	if r.TargetCount != r.Expected {
		r.Problem("target holds %d %s, expected %d", r.TargetCount, k.Name, r.Expected)
	}
	if inv.Limit == nil && records != r.SourceCount {
		r.Problem("%d %s records read, the source has %d now (run get again)", records, k.Name, r.SourceCount)
	}
	if n := records - r.ByStatus[string(ImportOK)] - acked; n > 0 {
		r.Problem("%d %s records are not IMPORT_OK", n, k.Name)
		issues, err := e.store().notImported(ctx, k)
		if err != nil {
			return err
		}
		r.NotImported = append(r.NotImported, issues...)
	}
	return nil
}

// verifyChildren checks that the target holds every child record read from the source, parent by
// parent (seed 001 "Members coverage").
func (e *Engine) verifyChildren(ctx context.Context, child *Entity, r *VerifyReport) error {
	cov := ChildCounts{Entity: child.Name, Source: -1}
	var err error
	if cov.Target, err = e.target.Count(ctx, child.Name); err != nil {
		return fmt.Errorf("verify %s: %w", child.Name, err)
	}
	byParent := map[string]*ParentCounts{}
	var order []string
	for after := int64(0); ; {
		recs, err := e.store().childPage(ctx, child, after, importapi.MaxItems)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		after = recs[len(recs)-1].id
		keys := make([]string, len(recs))
		for i, m := range recs {
			keys[i] = idempotencyKey(child.Name, m.sourceID)
		}
		_, gone, err := e.target.GetByKeys(ctx, child.Name, keys)
		if err != nil {
			return fmt.Errorf("verify %s: %w", child.Name, err)
		}
		for _, m := range recs {
			g := byParent[m.parent]
			if g == nil {
				g = &ParentCounts{Parent: m.parent, Source: -1, ParentImported: m.parentImported}
				byParent[m.parent] = g
				order = append(order, m.parent)
			}
			g.Read++
			cov.Read++
			if slices.Contains(gone, idempotencyKey(child.Name, m.sourceID)) {
				_, key, _ := strings.Cut(m.sourceID, ":")
				g.Missing = append(g.Missing, key)
				cov.Missing++
				continue
			}
			g.Target++
		}
	}
	parents := 0
	for _, id := range order {
		if g := byParent[id]; len(g.Missing) > 0 {
			parents++
			if len(cov.Short) < MaxListed {
				cov.Short = append(cov.Short, *g)
			}
		}
	}
	if cov.Missing > 0 {
		parent, _ := e.registry.Entity(child.Parent)
		r.Problem("%d %s of %d %s are missing on the target", cov.Missing, child.noun(), parents, parent.noun())
	}
	kept, err := e.store().keptOnTarget(ctx, child.Name)
	if err != nil {
		return err
	}
	if cov.Target != cov.Read+kept {
		r.Problem("target holds %d %s, %d were read from the source", cov.Target, child.Name, cov.Read+kept)
	}
	r.Children = append(r.Children, cov)
	return nil
}

// verifyRefs checks that every plain reference of the entity's records resolves: the referenced
// record has a target id, and the target's copy of an imported record names exactly that id
// (seed 001 "Owners"). References read by a Values function are the payload hook's to check,
// save the coverage of a Listed one.
func (e *Engine) verifyRefs(ctx context.Context, ent *Entity, r *VerifyReport) error {
	for _, ref := range ent.Refs {
		if ref.Listed {
			if err := e.verifyListCoverage(ctx, ent, ref, r); err != nil {
				return err
			}
		}
		if ref.Values != nil {
			continue
		}
		if ref.Many || ref.DropGone { // an Optional one is a plain reference when it is set
			if err := e.verifyLinks(ctx, ent, ref, r); err != nil {
				return err
			}
			continue
		}
		if err := e.verifyRef(ctx, ent, ref, r); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) verifyRef(ctx context.Context, ent *Entity, ref Ref, r *VerifyReport) error {
	unresolved := 0
	progress, err := e.refsProgress(ctx, ent, ref)
	if err != nil {
		return err
	}
	defer progress.end()
	for after := int64(0); ; {
		recs, err := e.store().refPage(ctx, ent, ref, after, importapi.MaxItems)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		progress.add(len(recs))
		after = recs[len(recs)-1].id
		var keys []string
		for _, g := range recs {
			if g.status == string(ImportOK) {
				keys = append(keys, idempotencyKey(ent.Name, g.sourceID))
			}
		}
		onTarget := map[string]string{}
		if len(keys) > 0 {
			items, _, err := e.target.GetByKeys(ctx, ent.Name, keys)
			if err != nil {
				return fmt.Errorf("verify %s %s: %w", ent.Name, ref.Field, err)
			}
			for _, it := range items {
				fields, err := FieldsOf(it.Payload)
				if err != nil {
					return fmt.Errorf("verify %s %s: target record %s: %w", ent.Name, ref.Field, it.Key, err)
				}
				onTarget[it.Key] = Text(fields, ref.Field)
			}
		}
		for _, g := range recs {
			issue := RecordIssue{Entity: ent.Name, SourceID: g.sourceID, Status: g.status}
			got, imported := onTarget[idempotencyKey(ent.Name, g.sourceID)]
			switch {
			case g.target == nil:
				issue.Reason = (&UnresolvedError{Field: ref.Field, Entity: ref.Entity, SourceID: g.value}).Error()
			case imported && got != *g.target:
				issue.Reason = fmt.Sprintf("%s on the target is %q, want %s (%s %s)", ref.name(), got, *g.target,
					strings.TrimSuffix(ref.Entity, "s"), g.value)
			default:
				continue
			}
			unresolved++
			if len(r.UnresolvedRefs) < MaxListed {
				r.UnresolvedRefs = append(r.UnresolvedRefs, issue)
			}
		}
	}
	if unresolved > 0 {
		r.Problem("%d %s have an unresolved %s", unresolved, ent.noun(), ref.name())
	}
	return nil
}

// verifySample compares a random sample of IMPORT_OK records with the target, field by field,
// against what set would send for them now.
func (e *Engine) verifySample(ctx context.Context, k *Entity, r *VerifyReport) error {
	return e.compareSample(ctx, k, r, func(ctx context.Context, chunk []Record) (recordComparer, error) {
		rf, err := loadRefs(ctx, e.pool, k, chunk)
		if err != nil {
			return nil, err
		}
		return func(rec Record, onTarget map[string]importapi.Record) ([]Mismatch, error) {
			return compareRecord(k, rec, rf, onTarget)
		}, nil
	})
}

// recordComparer lists the differences between a sampled record and the target's copies.
type recordComparer func(rec Record, onTarget map[string]importapi.Record) ([]Mismatch, error)

// compareSample draws SampleSize random IMPORT_OK records of k, reads their copies from the
// target a chunk at a time, and adds what the comparer from prepare (which loads what a chunk
// refers to) finds to r: each mismatch listed (up to maxListed) and each mismatched record
// counted in verify_sample_mismatch_total.
func (e *Engine) compareSample(ctx context.Context, k *Entity, r *VerifyReport,
	prepare func(ctx context.Context, chunk []Record) (recordComparer, error)) error {
	recs, err := e.store().sample(ctx, k.Name, e.sampleSize)
	if err != nil {
		return err
	}
	for chunk := range slices.Chunk(recs, importapi.MaxItems) {
		compare, err := prepare(ctx, chunk)
		if err != nil {
			return err
		}
		keys := make([]string, len(chunk))
		for i, rec := range chunk {
			keys[i] = rec.IdempotencyKey()
		}
		items, _, err := e.target.GetByKeys(ctx, k.Name, keys)
		if err != nil {
			return fmt.Errorf("verify %s: sample: %w", k.Name, err)
		}
		onTarget := map[string]importapi.Record{}
		for _, it := range items {
			onTarget[it.Key] = it
		}
		for _, rec := range chunk {
			r.Sampled++
			diffs, err := compare(rec, onTarget)
			if err != nil {
				return fmt.Errorf("verify %s %s: %w", k.Name, rec.SourceID, err)
			}
			for _, d := range diffs {
				d.Entity, d.SourceID = k.Name, rec.SourceID
				if len(r.Mismatches) < MaxListed {
					r.Mismatches = append(r.Mismatches, d)
				}
			}
			if len(diffs) > 0 {
				r.MismatchedRecords++
				if r.countMismatch(k.Name, rec.SourceID) {
					e.metrics.VerifyMismatch.WithLabelValues(k.Name).Inc()
				}
			}
		}
	}
	return nil
}

// compareRecord lists the differences between what set would send for a record now and the
// target's copy of it.
func compareRecord(k *Entity, rec Record, rf *Refs, onTarget map[string]importapi.Record) ([]Mismatch, error) {
	want, err := payloadFor(k, rec, rf)
	if err != nil {
		// Imported, yet its references no longer resolve (an id map row is gone).
		return []Mismatch{{Field: "*", Want: "a payload", Got: err.Error()}}, nil
	}
	tr, ok := onTarget[rec.IdempotencyKey()]
	if !ok {
		return []Mismatch{{Field: "*", Want: "the record", Got: "missing on the target"}}, nil
	}
	diffs, err := diffPayloads(rf.shape, want, tr.Payload)
	for i := range diffs {
		diffs[i].TargetID = tr.TargetID
	}
	return diffs, err
}

// slowStep is how long a step of verify may take before it says so at info level: the steps
// that read every record (the entity's own checks, the references) speak on a large entity,
// the quick ones stay at debug.
const slowStep = time.Second

// verifySteps returns a function that logs the end of each step of an entity's verify with its
// time, so that no long step is silent.
func (e *Engine) verifySteps(entity string) func(step string) {
	last := e.now()
	return func(step string) {
		now := e.now()
		took := now.Sub(last)
		last = now
		level := slog.LevelDebug
		if took >= slowStep {
			level = slog.LevelInfo
		}
		e.log.Log(context.Background(), level, "verify step done", "entity", entity, "step", step, "took_s", round1(took.Seconds()))
	}
}

// sourceTotal is the portal's count of an entity: the one this run's get read (runTotal: the
// whole listing's total, or a delta pass's ID ranges' counts added up), the sum of those of every
// scan of a ScanLister, or the lister's count. A rerun then asks the portal nothing more for
// verify's count than its get did. fromRun says the count is this run's get's.
func (e *Engine) sourceTotal(ctx context.Context, k *Entity) (total int64, fromRun bool, err error) {
	if n, ok, err := e.runTotal(ctx, k.Name); err != nil || ok {
		if ok {
			e.log.Debug("source count from this run's get", "entity", k.Name, "count", n)
		}
		return n, ok, err
	}
	if l, ok := k.Lister.(ScanLister); ok { // every scan counted in this run: their sum
		scans, err := l.Scans(ctx, e.env(), k)
		if err != nil {
			return 0, false, err
		}
		var sum int64
		counted := len(scans) > 0
		for _, s := range scans {
			n, ok, err := e.runTotal(ctx, s.scope(k))
			if err != nil {
				return 0, false, err
			}
			if !ok {
				counted = false
				break
			}
			sum += n
		}
		if counted {
			e.log.Debug("source count from this run's get", "entity", k.Name, "count", sum, "scans", len(scans))
			return sum, true, nil
		}
	}
	total, err = k.Lister.Total(ctx, e.env(), k)
	return total, false, err
}
