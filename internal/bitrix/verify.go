package bitrix

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/status"
)

// Verify compares the entity on the target with the source and the database: counts, records
// left unimported, for groups the coverage of memberships and the resolution of every owner,
// and a random sample of IMPORT_OK records field by field. The report is stored; the entity's
// VERIFIED flag is set only when it is clean. Mismatches are counted in
// verify_sample_mismatch_total.
func (e *Engine) Verify(ctx context.Context, entity string) (VerifyReport, error) {
	k, err := lookup(entity)
	if err != nil {
		return VerifyReport{}, err
	}
	defer e.Metrics.Phase(k.name, "verify")()
	r := VerifyReport{Entity: k.name, At: e.now().UTC(), ByStatus: map[string]int64{}}
	if err := e.verifyCounts(ctx, k, &r); err != nil {
		return r, err
	}
	if k.name == Groups {
		if err := e.verifyMembers(ctx, &r); err != nil {
			return r, err
		}
		if err := e.verifyOwners(ctx, &r); err != nil {
			return r, err
		}
	}
	sampled := []kind{k}
	if k.name == Groups {
		sampled = append(sampled, kinds[GroupMembers])
	}
	for _, sk := range sampled {
		if err := e.verifySample(ctx, sk, &r); err != nil {
			return r, err
		}
	}
	if r.MismatchedRecords > 0 {
		r.problem("%d of %d sampled records differ from the target", r.MismatchedRecords, r.Sampled)
	}
	if err := saveVerify(ctx, e.Pool, k.name, r); err != nil {
		return r, err
	}
	if r.Clean() {
		e.Log.Info("verify clean: entity VERIFIED", "entity", k.name, "target_count", r.TargetCount,
			"expected", r.Expected, "sampled", r.Sampled)
	} else {
		e.Log.Warn("verify found problems: entity not verified", "entity", k.name, "problems", r.Summary())
	}
	return r, nil
}

// verifyCounts compares the portal's count, the target's count and the records' statuses.
func (e *Engine) verifyCounts(ctx context.Context, k kind, r *VerifyReport) error {
	params := map[string]any{"start": 0}
	for key, v := range k.scan.Params {
		params[key] = v
	}
	if k.name == Users {
		params["select"] = []string{"ID"}
	}
	resp, err := e.Source.Call(ctx, k.scan.Method, params)
	if err != nil {
		return fmt.Errorf("verify %s: source count: %w", k.name, err)
	}
	if resp.Total == nil {
		return fmt.Errorf("verify %s: %s reported no total", k.name, k.scan.Method)
	}
	r.SourceCount = int64(*resp.Total)
	if r.TargetCount, err = e.Target.Count(ctx, k.name); err != nil {
		return fmt.Errorf("verify %s: %w", k.name, err)
	}
	counts, err := Machine.Counts(ctx, e.Pool)
	if err != nil {
		return err
	}
	var records int64
	for _, c := range counts {
		if c.Scope == k.name {
			r.ByStatus[string(c.Status)] = c.N
			records += c.N
		}
	}
	inv, err := loadInventory(ctx, e.Pool, k.name)
	if err != nil {
		return err
	}
	r.Expected = r.SourceCount
	if inv.Limit != nil {
		r.TestLimit = inv.Limit
		r.Expected = records
	}
	if r.TargetCount != r.Expected {
		r.problem("target holds %d %s, expected %d", r.TargetCount, k.name, r.Expected)
	}
	if inv.Limit == nil && records != r.SourceCount {
		r.problem("%d %s records read, the source has %d now (run get again)", records, k.name, r.SourceCount)
	}
	if n := records - r.ByStatus[string(ImportOK)]; n > 0 {
		r.problem("%d %s records are not IMPORT_OK", n, k.name)
		issues, err := notImported(ctx, e.Pool, k.name)
		if err != nil {
			return err
		}
		r.NotImported = append(r.NotImported, issues...)
	}
	return nil
}

func notImported(ctx context.Context, db status.DB, entity string) ([]RecordIssue, error) {
	rows, err := db.Query(ctx, `SELECT source_id, status, coalesce(last_error, '') FROM bitrix_records
WHERE entity = $1 AND status <> 'IMPORT_OK' ORDER BY id LIMIT $2`, entity, maxListed)
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RecordIssue, error) {
		i := RecordIssue{Entity: entity}
		err := row.Scan(&i.SourceID, &i.Status, &i.Reason)
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("list unimported %s: %w", entity, err)
	}
	return out, nil
}

// verifyMembers checks that the target holds every membership read from the source, group by
// group (seed 001 "Members coverage").
func (e *Engine) verifyMembers(ctx context.Context, r *VerifyReport) error {
	cov := &MemberCoverage{}
	r.Members = cov
	var err error
	if cov.Target, err = e.Target.Count(ctx, GroupMembers); err != nil {
		return fmt.Errorf("verify groups: %w", err)
	}
	byGroup := map[string]*GroupCoverage{}
	var order []string
	for after := int64(0); ; {
		rows, err := e.Pool.Query(ctx, `SELECT m.id, m.source_id, m.parent_source_id,
    EXISTS (SELECT 1 FROM bitrix_records g WHERE g.entity = 'groups' AND g.source_id = m.parent_source_id AND g.status = 'IMPORT_OK')
FROM bitrix_records m WHERE m.entity = 'group_members' AND m.id > $1 ORDER BY m.id LIMIT $2`, after, importapi.MaxItems)
		if err != nil {
			return fmt.Errorf("verify members: %w", err)
		}
		type member struct {
			id              int64
			sourceID, group string
			groupImported   bool
		}
		ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (member, error) {
			var m member
			err := row.Scan(&m.id, &m.sourceID, &m.group, &m.groupImported)
			return m, err
		})
		if err != nil {
			return fmt.Errorf("verify members: %w", err)
		}
		if len(ms) == 0 {
			break
		}
		after = ms[len(ms)-1].id
		keys := make([]string, len(ms))
		for i, m := range ms {
			keys[i] = idempotencyKey(GroupMembers, m.sourceID)
		}
		_, gone, err := e.Target.GetByKeys(ctx, GroupMembers, keys)
		if err != nil {
			return fmt.Errorf("verify members: %w", err)
		}
		for _, m := range ms {
			g := byGroup[m.group]
			if g == nil {
				g = &GroupCoverage{GroupID: m.group, GroupImported: m.groupImported}
				byGroup[m.group] = g
				order = append(order, m.group)
			}
			g.Source++
			cov.Source++
			if slices.Contains(gone, idempotencyKey(GroupMembers, m.sourceID)) {
				_, user, _ := strings.Cut(m.sourceID, ":")
				g.MissingUsers = append(g.MissingUsers, user)
				cov.Missing++
				continue
			}
			g.OnTarget++
		}
	}
	groups := 0
	for _, id := range order {
		if g := byGroup[id]; len(g.MissingUsers) > 0 {
			groups++
			if len(cov.Groups) < maxListed {
				cov.Groups = append(cov.Groups, *g)
			}
		}
	}
	if cov.Missing > 0 {
		r.problem("%d memberships of %d groups are missing on the target", cov.Missing, groups)
	}
	if cov.Target != cov.Source {
		r.problem("target holds %d group_members, %d were read from the source", cov.Target, cov.Source)
	}
	return nil
}

// verifyOwners checks that every group's owner resolves: the owner has a target id, and the
// target's copy of an imported group names exactly that id (seed 001 "Owners").
func (e *Engine) verifyOwners(ctx context.Context, r *VerifyReport) error {
	unresolved := 0
	for after := int64(0); ; {
		rows, err := e.Pool.Query(ctx, `SELECT g.id, g.source_id, g.status, coalesce(g.payload->>'OWNER_ID', ''), u.target_id
FROM bitrix_records g LEFT JOIN bitrix_id_map u ON u.entity = 'users' AND u.source_id = g.payload->>'OWNER_ID'
WHERE g.entity = 'groups' AND g.id > $1 ORDER BY g.id LIMIT $2`, after, importapi.MaxItems)
		if err != nil {
			return fmt.Errorf("verify owners: %w", err)
		}
		type group struct {
			id                      int64
			sourceID, status, owner string
			ownerTarget             *string
		}
		gs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (group, error) {
			var g group
			err := row.Scan(&g.id, &g.sourceID, &g.status, &g.owner, &g.ownerTarget)
			return g, err
		})
		if err != nil {
			return fmt.Errorf("verify owners: %w", err)
		}
		if len(gs) == 0 {
			break
		}
		after = gs[len(gs)-1].id
		var keys []string
		for _, g := range gs {
			if g.status == string(ImportOK) {
				keys = append(keys, idempotencyKey(Groups, g.sourceID))
			}
		}
		onTarget := map[string]string{}
		if len(keys) > 0 {
			items, _, err := e.Target.GetByKeys(ctx, Groups, keys)
			if err != nil {
				return fmt.Errorf("verify owners: %w", err)
			}
			for _, it := range items {
				fields, err := fieldsOf(it.Payload)
				if err != nil {
					return fmt.Errorf("verify owners: target group %s: %w", it.Key, err)
				}
				onTarget[it.Key] = text(fields, "OWNER_ID")
			}
		}
		for _, g := range gs {
			issue := RecordIssue{Entity: Groups, SourceID: g.sourceID, Status: g.status}
			got, imported := onTarget[idempotencyKey(Groups, g.sourceID)]
			switch {
			case g.ownerTarget == nil:
				issue.Reason = (&UnresolvedError{Field: "OWNER_ID", Entity: Users, SourceID: g.owner}).Error()
			case imported && got != *g.ownerTarget:
				issue.Reason = fmt.Sprintf("owner on the target is %q, want %s (user %s)", got, *g.ownerTarget, g.owner)
			default:
				continue
			}
			unresolved++
			if len(r.UnresolvedOwners) < maxListed {
				r.UnresolvedOwners = append(r.UnresolvedOwners, issue)
			}
		}
	}
	if unresolved > 0 {
		r.problem("%d groups have an unresolved owner", unresolved)
	}
	return nil
}

// verifySample compares a random sample of IMPORT_OK records with the target, field by field,
// against what set would send for them now.
func (e *Engine) verifySample(ctx context.Context, k kind, r *VerifyReport) error {
	return e.compareSample(ctx, k, r, func(ctx context.Context, chunk []Record) (recordComparer, error) {
		rf, err := loadRefs(ctx, e.Pool, k.name, chunk)
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
func (e *Engine) compareSample(ctx context.Context, k kind, r *VerifyReport,
	prepare func(ctx context.Context, chunk []Record) (recordComparer, error)) error {
	size := e.SampleSize
	if size <= 0 {
		size = 50
	}
	rows, err := e.Pool.Query(ctx, `SELECT `+recordColumns+` FROM bitrix_records WHERE entity = $1 AND status = 'IMPORT_OK'
ORDER BY random() LIMIT $2`, k.name, size)
	if err != nil {
		return fmt.Errorf("verify %s: sample: %w", k.name, err)
	}
	recs, err := pgx.CollectRows(rows, scanRecord)
	if err != nil {
		return fmt.Errorf("verify %s: sample: %w", k.name, err)
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
		items, _, err := e.Target.GetByKeys(ctx, k.name, keys)
		if err != nil {
			return fmt.Errorf("verify %s: sample: %w", k.name, err)
		}
		onTarget := map[string]importapi.Record{}
		for _, it := range items {
			onTarget[it.Key] = it
		}
		for _, rec := range chunk {
			r.Sampled++
			diffs, err := compare(rec, onTarget)
			if err != nil {
				return fmt.Errorf("verify %s %s: %w", k.name, rec.SourceID, err)
			}
			for _, d := range diffs {
				d.Entity, d.SourceID = k.name, rec.SourceID
				if len(r.Mismatches) < maxListed {
					r.Mismatches = append(r.Mismatches, d)
				}
			}
			if len(diffs) > 0 {
				r.MismatchedRecords++
				e.Metrics.VerifyMismatch.WithLabelValues(k.name).Inc()
			}
		}
	}
	return nil
}

// compareRecord lists the differences between what set would send for a record now and the
// target's copy of it.
func compareRecord(k kind, rec Record, rf refs, onTarget map[string]importapi.Record) ([]Mismatch, error) {
	want, err := payloadFor(k, rec, rf)
	if err != nil {
		// Imported, yet its references no longer resolve (an id map row is gone).
		return []Mismatch{{Field: "*", Want: "a payload", Got: err.Error()}}, nil
	}
	tr, ok := onTarget[rec.IdempotencyKey()]
	if !ok {
		return []Mismatch{{Field: "*", Want: "the record", Got: "missing on the target"}}, nil
	}
	diffs, err := diffPayloads(want, tr.Payload)
	for i := range diffs {
		diffs[i].TargetID = tr.TargetID
	}
	return diffs, err
}
