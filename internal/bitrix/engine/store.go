package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingest-dev/ingest/internal/pgtext"
	"github.com/ingest-dev/ingest/internal/status"
)

// Record is a row of bitrix_records.
type Record struct {
	ID             int64
	Entity         string
	SourceID       string
	ParentSourceID string
	Payload        json.RawMessage
	Checksum       string
	Dates          map[string]Date
	Status         status.Status
	Attempts       int
	LastError      string
	Retries        int
	NextAttemptAt  *time.Time
}

// IdempotencyKey is what the target deduplicates the record on (seed 000): source:<entity>:<id>.
func (r Record) IdempotencyKey() string { return idempotencyKey(r.Entity, r.SourceID) }

func idempotencyKey(entity, sourceID string) string { return "source:" + entity + ":" + sourceID }

// Incoming is a record as a get read it, before it is stored: NewIncoming has cleaned its text,
// computed its checksum and parsed its dates, so storing it only writes.
type Incoming struct {
	sourceID, parent string
	payload          json.RawMessage
	checksum         string
	dates            map[string]Date
	// refused is why the record cannot be migrated (its payload's unreachableKey), if so.
	refused string
	// cleaned is what cleanText changed in the payload as the portal sent it (nil: nothing).
	cleaned []pgtext.Change
}

// NewIncoming prepares a source row, given as its raw JSON and its decoded fields: its checksum
// and parsed dates.
func NewIncoming(ent *Entity, sourceID, parent string, payload json.RawMessage, fields map[string]json.RawMessage, zone *time.Location) (Incoming, error) {
	payload, fields, cleaned := cleanText(payload, fields)
	sum, err := recordChecksum(fields, ent.Volatile)
	if err != nil {
		return Incoming{}, fmt.Errorf("%s %s: %w", ent.Name, sourceID, err)
	}
	return Incoming{sourceID: sourceID, parent: parent, payload: payload, checksum: sum,
		dates: parseDates(fields, ent.Dates, zone), refused: Text(fields, UnreachableKey), cleaned: cleaned}, nil
}

// recordChecksum is the checksum of a source row by which get tells a changed record: the row
// without its volatile fields and without the fields that hold no value (absent, null, "", []
// or {}), so that a portal leaving out an empty field in one answer and sending it as "" or null
// in the next does not make the record changed. Rows without empty fields keep the checksum
// earlier versions stored; a row stored by them with empty fields is taken for changed once and
// sent again once, with its canonical payload, under the same key (updated in place).
func recordChecksum(fields map[string]json.RawMessage, volatile []string) (string, error) {
	skip := volatile
	for k, v := range fields {
		if isNoValue(v, kindAny) {
			if len(skip) == len(volatile) {
				skip = slices.Clone(volatile)
			}
			skip = append(skip, k)
		}
	}
	return fieldsChecksum(fields, skip)
}

// Saved counts what storing a page did, for the get's counts, its log and its metrics.
type Saved struct {
	Inserted, Changed, Unchanged int
	// Cleaned are the records whose text was cleaned before it was stored (textclean.go);
	// Unstorable those Postgres refused even so, stored as stubs in IMPORT_ERR.
	Cleaned    []Cleaned
	Unstorable []Unstorable
}

// saveRecords stores records of one entity read from the source (seed 000 "Idempotency"): a new
// one is inserted as NEW; one whose checksum differs gets the new payload and goes back to NEW
// through the state machine, so its history shows why; an unchanged one keeps its payload and
// status and only records that it was seen.
func (s Store) saveRecords(ctx context.Context, entity string, recs []Incoming, c status.Change) (Saved, error) {
	if s.tx == nil {
		return Saved{}, errNoTx
	}
	var out Saved
	if len(recs) == 0 {
		return out, nil
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.sourceID
	}
	type current struct {
		id       int64
		status   status.Status
		checksum string
	}
	rows, err := s.tx.Query(ctx, `SELECT source_id, id, status, checksum FROM bitrix_records
WHERE entity = $1 AND source_id = ANY($2) ORDER BY id FOR UPDATE`, entity, ids)
	if err != nil {
		return out, fmt.Errorf("load %s records: %w", entity, err)
	}
	known := map[string]current{}
	for rows.Next() {
		var sid, st string
		var cur current
		if err := rows.Scan(&sid, &cur.id, &st, &cur.checksum); err != nil {
			rows.Close()
			return out, fmt.Errorf("load %s records: %w", entity, err)
		}
		cur.status = status.Status(st)
		known[sid] = cur
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("load %s records: %w", entity, err)
	}

	var fresh, changed []Incoming
	var changedIDs []int64
	var seen []string
	back := map[status.Status][]int64{} // changed records to move to NEW, by their status
	for _, r := range recs {
		cur, ok := known[r.sourceID]
		switch {
		case !ok:
			fresh = append(fresh, r)
		// A record the portal deleted and shows again goes back to the normal flow, changed or not.
		case cur.checksum != r.checksum || IsDeleted(cur.status):
			changed = append(changed, r)
			changedIDs = append(changedIDs, cur.id)
			if cur.status != StatusNew {
				back[cur.status] = append(back[cur.status], cur.id)
			}
		default:
			seen = append(seen, r.sourceID)
		}
	}
	for _, r := range recs {
		if r.cleaned != nil {
			out.Cleaned = append(out.Cleaned, Cleaned{SourceID: r.sourceID, Changes: r.cleaned})
		}
	}
	if len(fresh) > 0 {
		n, err := s.insertRecords(ctx, entity, fresh)
		if isDataError(err) {
			// Some record of the page is one Postgres refuses: the others go in without it.
			var bad []Unstorable
			n, bad, err = s.insertOneByOne(ctx, entity, fresh)
			out.Unstorable = append(out.Unstorable, bad...)
		}
		if err != nil {
			return out, err
		}
		out.Inserted = n
	}
	if len(changed) > 0 {
		bad, err := s.updateChanged(ctx, entity, changed)
		if err != nil {
			return out, err
		}
		out.Unstorable = append(out.Unstorable, bad...)
		out.Changed = len(changed)
		// A changed record is new work: its next failure starts a fresh schedule.
		if err := Machine.ResetSchedule(ctx, s.tx, changedIDs); err != nil {
			return out, err
		}
		for from, ids := range back {
			if _, err := Machine.MoveMany(ctx, s.tx, ids, from, StatusNew, c); err != nil {
				return out, err
			}
		}
	}
	if err := s.refuseUnstorable(ctx, entity, out.Unstorable, c); err != nil {
		return out, err
	}
	if len(seen) > 0 {
		_, err := s.tx.Exec(ctx, `UPDATE bitrix_records SET fetched_at = now() WHERE entity = $1 AND source_id = ANY($2)`, entity, seen)
		if err != nil {
			return out, fmt.Errorf("mark %s records seen: %w", entity, err)
		}
		out.Unchanged = len(seen)
	}
	return out, nil
}

// insertRecords inserts records not stored yet and returns how many it inserted. It copies them
// (COPY is several times cheaper per row than an INSERT, which on a large get is most of the
// cost of storing), inside a savepoint: should another transaction have stored one of them
// meanwhile, the copy fails on the unique key and the records go in by an INSERT that skips
// the ones already there.
func (s Store) insertRecords(ctx context.Context, entity string, recs []Incoming) (int, error) {
	if s.tx == nil {
		return 0, errNoTx
	}
	err := pgx.BeginFunc(ctx, s.tx, func(sp pgx.Tx) error {
		_, err := sp.CopyFrom(ctx, pgx.Identifier{"bitrix_records"},
			[]string{"entity", "source_id", "parent_source_id", "payload", "checksum", "dates"},
			pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
				r := recs[i]
				var parent *string
				if r.parent != "" {
					parent = &r.parent
				}
				return []any{entity, r.sourceID, parent, string(r.payload), r.checksum, datesJSON(r.dates)}, nil
			}))
		return err
	})
	if err == nil {
		return len(recs), nil
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); !ok || pgErr.Code != uniqueViolation {
		return 0, fmt.Errorf("insert %s records: %w", entity, err)
	}
	var n int
	err = pgx.BeginFunc(ctx, s.tx, func(sp pgx.Tx) error {
		tag, err := sp.Exec(ctx, `INSERT INTO bitrix_records (entity, source_id, parent_source_id, payload, checksum, dates)
SELECT $1, s, NULLIF(p, ''), pl::jsonb, c, d::json FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(s, p, pl, c, d)
ON CONFLICT (entity, source_id) DO NOTHING`, append([]any{entity}, columns(recs)...)...)
		n = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("insert %s records: %w", entity, err)
	}
	return n, nil
}

// uniqueViolation is Postgres' SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// datesJSON writes a record's dates as json.Marshal does (keys sorted, the same escapes and
// omitted fields), by hand: through reflection it was a tenth of the cost of storing a row.
func datesJSON(d map[string]Date) string {
	buf := make([]byte, 0, 96*len(d)+2)
	buf = append(buf, '{')
	for i, name := range SortedKeys(d) {
		if i > 0 {
			buf = append(buf, ',')
		}
		v := d[name]
		buf = appendCanonicalString(buf, name)
		buf = append(buf, `:{"raw":`...)
		buf = appendCanonicalString(buf, v.Raw)
		if !v.UTC.IsZero() {
			buf = append(buf, `,"utc":"`...)
			buf = v.UTC.AppendFormat(buf, time.RFC3339Nano)
			buf = append(buf, '"')
		}
		if v.Offset != "" {
			buf = append(buf, `,"offset":`...)
			buf = appendCanonicalString(buf, v.Offset)
		}
		if v.Assumed {
			buf = append(buf, `,"assumed":true`...)
		}
		if v.Err != "" {
			buf = append(buf, `,"error":`...)
			buf = appendCanonicalString(buf, v.Err)
		}
		buf = append(buf, '}')
	}
	return string(append(buf, '}'))
}

// columns turns records into the parallel arrays the unnest statements take. Payloads and dates
// go as text and are cast to jsonb and json by the server, which checks them anyway: as jsonb[]
// parameters the driver would re-validate every document on the client first.
func columns(recs []Incoming) []any {
	sids := make([]string, len(recs))
	parents := make([]string, len(recs))
	payloads := make([]string, len(recs))
	sums := make([]string, len(recs))
	dates := make([]string, len(recs))
	for i, r := range recs {
		sids[i], parents[i], payloads[i], sums[i] = r.sourceID, r.parent, string(r.payload), r.checksum
		dates[i] = datesJSON(r.dates)
	}
	return []any{sids, parents, payloads, sums, dates}
}

const recordColumns = `id, entity, source_id, coalesce(parent_source_id, ''), payload, checksum, dates, status,
attempts, coalesce(last_error, ''), retries, next_attempt_at`

func scanRecord(row pgx.CollectableRow) (Record, error) {
	var r Record
	var st string
	var dates []byte
	err := row.Scan(&r.ID, &r.Entity, &r.SourceID, &r.ParentSourceID, &r.Payload, &r.Checksum, &dates, &st,
		&r.Attempts, &r.LastError, &r.Retries, &r.NextAttemptAt)
	if err != nil {
		return r, err
	}
	r.Status = status.Status(st)
	if err := json.Unmarshal(dates, &r.Dates); err != nil {
		return r, fmt.Errorf("decode dates of record %d: %w", r.ID, err)
	}
	return r, nil
}

// loadRecords returns the records with the given ids, in id order.
func (s Store) loadRecords(ctx context.Context, ids []int64) ([]Record, error) {
	rows, err := s.db.Query(ctx, `SELECT `+recordColumns+` FROM bitrix_records WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("load records: %w", err)
	}
	recs, err := pgx.CollectRows(rows, scanRecord)
	if err != nil {
		return nil, fmt.Errorf("load records: %w", err)
	}
	return recs, nil
}

// Record returns one record by entity and source id.
func (s Store) Record(ctx context.Context, entity, sourceID string) (Record, error) {
	rows, err := s.db.Query(ctx, `SELECT `+recordColumns+` FROM bitrix_records WHERE entity = $1 AND source_id = $2`, entity, sourceID)
	if err != nil {
		return Record{}, fmt.Errorf("%s record %s: %w", entity, sourceID, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRecord)
	if err != nil {
		return Record{}, fmt.Errorf("%s record %s: %w", entity, sourceID, err)
	}
	return r, nil
}

// missing returns those of the source ids that have no record of the entity.
func (s Store) missing(ctx context.Context, entity string, ids []string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT s FROM unnest($2::text[]) AS s
WHERE NOT EXISTS (SELECT 1 FROM bitrix_records r WHERE r.entity = $1 AND r.source_id = s) ORDER BY s`, entity, ids)
	if err != nil {
		return nil, fmt.Errorf("find missing %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find missing %s: %w", entity, err)
	}
	return out, nil
}

// RecordDetail is one record with what a person fixing it by hand needs besides: where it is on
// the target, and when it was last read and last changed.
type RecordDetail struct {
	Record
	// TargetID and ImportedAt are from the id map; empty when the target does not hold it.
	TargetID   string
	ImportedAt *time.Time
	// FetchedAt is when a get last read the record; UpdatedAt when its payload last changed.
	FetchedAt, UpdatedAt time.Time
	// AcknowledgedAt, By and Reason say who accepted the record as a known exception, and why
	// (`ingest status ack`); AcknowledgedAt is nil when nobody did.
	AcknowledgedAt                     *time.Time
	AcknowledgedBy, AcknowledgedReason string
}

// recordDetail returns one record by entity and source id, with its id map row.
func (s Store) recordDetail(ctx context.Context, entity, sourceID string) (RecordDetail, error) {
	r, err := s.Record(ctx, entity, sourceID)
	if err != nil {
		return RecordDetail{}, err
	}
	d := RecordDetail{Record: r}
	err = s.db.QueryRow(ctx, `SELECT r.fetched_at, r.updated_at, coalesce(m.target_id, ''), m.imported_at,
r.acknowledged_at, coalesce(r.acknowledged_by, ''), coalesce(r.acknowledged_reason, '')
FROM bitrix_records r LEFT JOIN bitrix_id_map m ON m.entity = r.entity AND m.source_id = r.source_id
WHERE r.id = $1`, r.ID).Scan(&d.FetchedAt, &d.UpdatedAt, &d.TargetID, &d.ImportedAt,
		&d.AcknowledgedAt, &d.AcknowledgedBy, &d.AcknowledgedReason)
	if err != nil {
		return RecordDetail{}, fmt.Errorf("%s record %s: %w", entity, sourceID, err)
	}
	return d, nil
}

// finishWalk marks a walked entity's pass complete: the portal counts none of its records, so
// the source total is what the walk stored.
func (s Store) finishWalk(ctx context.Context, entity string) error {
	stored, err := s.storedCount(ctx, entity)
	if err != nil {
		return err
	}
	return s.finishPass(ctx, entity, stored)
}

// storedCount is how many records of an entity are stored, leaving out those the portal deleted.
func (s Store) storedCount(ctx context.Context, entity string) (int64, error) {
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM bitrix_records WHERE entity = $1 AND `+live(""), entity).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", entity, err)
	}
	return n, nil
}

// finishPass marks an entity's get pass complete with the number of rows the source had.
func (s Store) finishPass(ctx context.Context, entity string, total int64) error {
	_, err := s.db.Exec(ctx, `UPDATE bitrix_inventory SET get_complete = true, get_finished_at = now(),
source_total = $2, `+lastFullAtSQL("true")+`, updated_at = now() WHERE entity = $1`, entity, total)
	if err != nil {
		return fmt.Errorf("finish get pass of %s: %w", entity, err)
	}
	return nil
}

// storedIDs returns the source ids of an entity's records, in record order.
func (s Store) storedIDs(ctx context.Context, entity string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT source_id FROM bitrix_records WHERE entity = $1 AND `+live("")+` ORDER BY id`, entity)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", entity, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", entity, err)
	}
	return out, nil
}

// refuseUnreachable moves the records among recs that carry an unreachable reason from NEW to
// IMPORT_ERR with it, in the transaction that stored them; it returns how many it moved.
func (s Store) refuseUnreachable(ctx context.Context, entity string, recs []Incoming, c status.Change) (int, error) {
	if s.tx == nil {
		return 0, errNoTx
	}
	byReason := map[string][]string{}
	for _, r := range recs {
		if r.refused != "" {
			byReason[r.refused] = append(byReason[r.refused], r.sourceID)
		}
	}
	moved := 0
	for _, reason := range SortedKeys(byReason) {
		rows, err := s.tx.Query(ctx, `SELECT id FROM bitrix_records WHERE entity = $1 AND source_id = ANY($2) AND status = $3 ORDER BY id`,
			entity, byReason[reason], string(StatusNew))
		if err != nil {
			return moved, fmt.Errorf("find unreachable %s: %w", entity, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return moved, fmt.Errorf("find unreachable %s: %w", entity, err)
		}
		if len(ids) == 0 {
			continue
		}
		c.Reason = reason
		done, err := Machine.MoveMany(ctx, s.tx, ids, StatusNew, ImportErr, c)
		if err != nil {
			return moved, err
		}
		moved += len(done)
	}
	return moved, nil
}
