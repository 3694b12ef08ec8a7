package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingest-dev/ingest/internal/pgtext"
	"github.com/ingest-dev/ingest/internal/status"
)

// Real people's text holds what Postgres refuses (a NUL, which PHP's json_encode writes as
// \u0000; invalid UTF-8; a lone surrogate escape), and one such record used to fail the insert of
// its whole page, so the entity's get, on every rerun. Every record is cleaned where it becomes an
// Incoming (pgtext: NUL removed, the others replaced with U+FFFD), so what is stored, what set
// sends and what verify compares are one cleaned text, and a rerun finds the record unchanged
// (its checksum is the cleaned fields'). A record Postgres still refuses is stored alone with a
// stub payload, in IMPORT_ERR with the cause (CodeUnstorable): never the page, nor the entity.

// CodeUnstorable is the reason code of a record whose payload Postgres refused even cleaned.
const CodeUnstorable = "payload_unstorable"

// unstorableKey is the stub payload's field that holds why the record's own payload could not be
// stored; set refuses such a record as it refuses an unreachable one (unreachableReason).
const unstorableKey = "_unstorable"

// Cleaned is a record stored with text cleaned out of its payload, and where.
type Cleaned struct {
	SourceID string
	Changes  []pgtext.Change
}

// Unstorable is a record whose payload Postgres refused even cleaned: kept as a stub in
// IMPORT_ERR with the reason (Stored), or, when not even the stub could be stored (its id is
// what Postgres refuses), not stored at all.
type Unstorable struct {
	SourceID, Reason string
	Stored           bool
}

// cleanText returns the payload and its fields as Postgres can store them, and what it changed
// (nil for a clean payload, which comes back as it is). fields are the payload's, so they need
// cleaning only when the payload did.
func cleanText(payload json.RawMessage, fields map[string]json.RawMessage) (json.RawMessage, map[string]json.RawMessage, []pgtext.Change) {
	out, changes := pgtext.JSON(payload)
	if changes == nil {
		return payload, fields, nil
	}
	clean := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		k, _ = pgtext.String(k)
		clean[k], _ = pgtext.JSON(v)
	}
	return out, clean, changes
}

// isDataError reports a statement Postgres refused for the data it was given (SQLSTATE class 22:
// an unstorable character, a number out of range, invalid JSON), as opposed to a failure of the
// database or of the statement itself.
func isDataError(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && strings.HasPrefix(pgErr.Code, "22")
}

// unstorableReason is the reason stored with a record Postgres refused.
func unstorableReason(err error) string {
	msg := err.Error()
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		msg = fmt.Sprintf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
	}
	return "the portal's record cannot be stored: " + msg
}

// stub is what is stored for a record in place of a payload Postgres refused.
func stub(reason string) Incoming {
	return Incoming{payload: MustJSON(map[string]string{unstorableKey: reason})}
}

// insertOneByOne inserts records one at a time, each in a savepoint, after the page's insert
// failed for the data of some of them: a record Postgres refuses goes in as a stub with the
// reason instead (or, when even that fails, is left out), and is returned. It returns how many
// records it inserted.
func (s Store) insertOneByOne(ctx context.Context, entity string, recs []Incoming) (int, []Unstorable, error) {
	n := 0
	var bad []Unstorable
	for _, r := range recs {
		got, err := s.insertOne(ctx, entity, r)
		if err == nil {
			n += got
			continue
		}
		if !isDataError(err) {
			return n, bad, err
		}
		u := Unstorable{SourceID: r.sourceID, Reason: unstorableReason(err)}
		sb := stub(u.Reason)
		sb.sourceID, sb.parent, sb.checksum = r.sourceID, r.parent, r.checksum
		got, err = s.insertOne(ctx, entity, sb)
		switch {
		case err == nil:
			n += got
			u.Stored = true
		case !isDataError(err):
			return n, bad, err
		}
		bad = append(bad, u)
	}
	return n, bad, nil
}

// insertOne inserts one record in a savepoint, unless it is stored already.
func (s Store) insertOne(ctx context.Context, entity string, r Incoming) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.tx, func(sp pgx.Tx) error {
		tag, err := sp.Exec(ctx, `INSERT INTO bitrix_records (entity, source_id, parent_source_id, payload, checksum, dates)
VALUES ($1, $2, NULLIF($3, ''), $4::text::jsonb, $5, $6::text::json) ON CONFLICT (entity, source_id) DO NOTHING`,
			entity, r.sourceID, r.parent, string(r.payload), r.checksum, datesJSON(r.dates))
		n = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("insert %s %s: %w", entity, r.sourceID, err)
	}
	return n, nil
}

// updateChanged stores the new payloads of changed records, all in one statement, or, when that
// fails for the data of some of them, one at a time: a record Postgres refuses gets a stub with
// the reason instead, and is returned.
func (s Store) updateChanged(ctx context.Context, entity string, recs []Incoming) ([]Unstorable, error) {
	err := pgx.BeginFunc(ctx, s.tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, `UPDATE bitrix_records r SET parent_source_id = NULLIF(u.p, ''), payload = u.pl::jsonb,
checksum = u.c, dates = u.d::json, fetched_at = now(), updated_at = now()
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(s, p, pl, c, d)
WHERE r.entity = $1 AND r.source_id = u.s`, append([]any{entity}, columns(recs)...)...)
		return err
	})
	if err == nil {
		return nil, nil
	}
	if !isDataError(err) {
		return nil, fmt.Errorf("update changed %s records: %w", entity, err)
	}
	var bad []Unstorable
	for _, r := range recs {
		err := s.updateOne(ctx, entity, r)
		if err == nil {
			continue
		}
		if !isDataError(err) {
			return bad, err
		}
		u := Unstorable{SourceID: r.sourceID, Reason: unstorableReason(err)}
		sb := stub(u.Reason)
		sb.sourceID, sb.checksum = r.sourceID, r.checksum
		err = s.updateOne(ctx, entity, sb)
		switch {
		case err == nil:
			u.Stored = true
		case !isDataError(err):
			return bad, err
		}
		bad = append(bad, u)
	}
	return bad, nil
}

// updateOne stores one changed record's new payload in a savepoint.
func (s Store) updateOne(ctx context.Context, entity string, r Incoming) error {
	err := pgx.BeginFunc(ctx, s.tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, `UPDATE bitrix_records SET parent_source_id = NULLIF($3, ''), payload = $4::text::jsonb,
checksum = $5, dates = $6::text::json, fetched_at = now(), updated_at = now() WHERE entity = $1 AND source_id = $2`,
			entity, r.sourceID, r.parent, string(r.payload), r.checksum, datesJSON(r.dates))
		return err
	})
	if err != nil {
		return fmt.Errorf("update %s %s: %w", entity, r.sourceID, err)
	}
	return nil
}

// refuseUnstorable moves the stored stubs among bad from NEW to IMPORT_ERR with their reasons and
// CodeUnstorable, in the transaction that stored them.
func (s Store) refuseUnstorable(ctx context.Context, entity string, bad []Unstorable, c status.Change) error {
	for _, u := range bad {
		if !u.Stored {
			continue
		}
		var id int64
		err := s.tx.QueryRow(ctx, `SELECT id FROM bitrix_records WHERE entity = $1 AND source_id = $2`, entity, u.SourceID).Scan(&id)
		if err != nil {
			return fmt.Errorf("find unstorable %s %s: %w", entity, u.SourceID, err)
		}
		c.Reason, c.Code = u.Reason, CodeUnstorable
		if _, err := Machine.MoveMany(ctx, s.tx, []int64{id}, StatusNew, ImportErr, c); err != nil {
			return err
		}
	}
	return nil
}

// noteSaved names in the log and counts in the metrics the records of a page stored with their
// text cleaned, and those Postgres refused.
func (e *Engine) noteSaved(entity string, sv Saved) {
	for _, c := range sv.Cleaned {
		e.log.Warn("text Postgres cannot store was cleaned out of a record", "entity", entity, "source_id", c.SourceID,
			"fields", pgtext.Paths(c.Changes), "replaced", pgtext.Describe(c.Changes))
	}
	if len(sv.Cleaned) > 0 {
		e.metrics.TextCleaned.WithLabelValues(entity).Add(float64(len(sv.Cleaned)))
	}
	for _, u := range sv.Unstorable {
		if u.Stored {
			e.log.Warn("record not stored: kept as a stub in IMPORT_ERR", "entity", entity, "source_id", u.SourceID, "code", CodeUnstorable, "reason", u.Reason)
		} else {
			e.log.Warn("record not stored, nor a stub for it", "entity", entity, "source_id", u.SourceID, "reason", u.Reason)
		}
		e.metrics.Processed.WithLabelValues(entity, CodeUnstorable).Inc()
	}
}
