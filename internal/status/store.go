package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the functions here need: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrTransition is returned (wrapped) when a move is not allowed by the machine.
var ErrTransition = errors.New("transition not allowed")

// statusExpr is a record's status as the statements that name their records by id compare it:
// an expression, so that no index on the status is chosen for them (see MoveMany).
const statusExpr = "(status || '')"

// PickParams selects the next batch of records.
type PickParams struct {
	// Statuses: records in any of these are picked. Required.
	Statuses []Status
	// After is the keyset cursor: only ids greater than it are picked. A run passes the last id
	// of its previous batch, so a record it just failed is not picked again in the same run.
	After int64
	// Limit is the batch size. Required.
	Limit int
	// ScopeValue limits the pick to one value of Machine.Scope (required when the machine has one).
	ScopeValue string
	// DueBy, when set, picks records waiting in Retry.Status or in one of Machine.Waiting only
	// once their next attempt is due at DueBy; other statuses are picked as usual.
	DueBy time.Time
	// Parent, when set, picks only child records whose parent is in one of its statuses.
	Parent *ParentPick
	// Shard, when set, picks only the records of one shard.
	Shard *Shard
}

// Shard is one of Count disjoint parts of a table: the records whose Column (an integer
// column: the record's id, or the id of the record it belongs to, so that a parent and its
// children fall in the same shard) modulo Count is Index. Shards of the same Count never share
// a record, so a command that takes one shard's lock never touches another shard's records.
type Shard struct {
	Column string
	Count  int
	Index  int
}

// Validate reports a shard that is not one of Count parts.
func (s *Shard) Validate() error {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d of %d: want 0 <= index < count", s.Index, s.Count)
	}
	return nil
}

// Pick returns up to Limit ids of records in the given statuses with id > After, in id order.
//
// Each status is read as its own range of the (status, id) index and the ranges are merged, so
// the cost depends on the batch size, not on how many records wait in a status.
func (m *Machine) Pick(ctx context.Context, db DB, p PickParams) ([]int64, error) {
	if len(p.Statuses) == 0 || p.Limit <= 0 {
		return nil, fmt.Errorf("pick %s: statuses and a positive limit are required", m.Name)
	}
	args := []any{p.After, p.Limit}
	common := ""
	if m.Scope != "" {
		args = append(args, p.ScopeValue)
		common += fmt.Sprintf(" AND r.%s = $%d", pgx.Identifier{m.Scope}.Sanitize(), len(args))
	}
	if p.Parent != nil {
		cond, more := p.Parent.condition(len(args) + 1)
		args = append(args, more...)
		common += " AND " + cond
	}
	if p.Shard != nil {
		if err := p.Shard.Validate(); err != nil {
			return nil, fmt.Errorf("pick %s: %w", m.Name, err)
		}
		args = append(args, p.Shard.Count, p.Shard.Index)
		common += fmt.Sprintf(" AND r.%s %% $%d = $%d", pgx.Identifier{p.Shard.Column}.Sanitize(), len(args)-1, len(args))
	}
	parts := make([]string, len(p.Statuses))
	for i, s := range p.Statuses {
		args = append(args, string(s))
		where := fmt.Sprintf("r.status = $%d AND r.id > $1%s", len(args), common)
		if m.waits(s) && !p.DueBy.IsZero() {
			args = append(args, p.DueBy)
			where += fmt.Sprintf(" AND coalesce(r.next_attempt_at, '-infinity') <= $%d", len(args))
		}
		parts[i] = fmt.Sprintf("(SELECT r.id FROM %s r WHERE %s ORDER BY r.id LIMIT $2)", m.table(), where)
	}
	sql := "SELECT id FROM (" + strings.Join(parts, " UNION ALL ") + ") picked ORDER BY id LIMIT $2"
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pick %s: %w", m.Name, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pick %s: %w", m.Name, err)
	}
	return ids, nil
}

// Change describes why and by whom a record moves.
type Change struct {
	// Reason says why. It is kept in status_history and, for automatic moves, as the record's
	// last_error (an empty reason clears last_error, as after a success).
	Reason string
	// Actor says who: "run 42 (extract habr)" or "manual: alice".
	Actor string
	// RunID links the move to its run (0 for none).
	RunID int64
	// Attempt counts the move as one processing attempt.
	Attempt bool
	// Manual marks a person's move: checked against Machine.Manual, and last_error is kept so
	// the reason for the earlier failure stays visible.
	Manual bool
	// Due is when a record moved into one of Machine.Waiting is due again (zero: at once).
	Due time.Time
	// Code classifies Reason for programs (see Machine.ReasonCodes and Revive): a short,
	// stable name such as "parent_unavailable", never a message's wording. Empty clears it.
	Code string
}

// sideColumns are the assignments every move makes besides the status (with a leading comma),
// their arguments numbered from next: an acknowledgement covers the failure it was given for,
// not what comes next; a move ends the attempt in flight; the reason code follows the reason
// (kept, as last_error is, by a person's move).
func (m *Machine) sideColumns(c Change, next int) (string, []any) {
	var set string
	var args []any
	if len(m.Acknowledgeable) > 0 {
		set += ", acknowledged_at = NULL, acknowledged_by = NULL, acknowledged_reason = NULL"
	}
	if m.InFlight {
		set += ", attempt_started_at = NULL, attempt_run_id = NULL"
	}
	if m.ReasonCodes && !c.Manual {
		set += fmt.Sprintf(", reason_code = NULLIF($%d, '')", next)
		args = append(args, c.Code)
	}
	return set, args
}

// Move moves one record from status from to status to, if and only if it is still in from. It
// reports whether the record moved: false means another move got there first (or the record is
// gone), which callers treat as "nothing to do", never as an error.
func (m *Machine) Move(ctx context.Context, db DB, id int64, from, to Status, c Change) (bool, error) {
	moved, err := m.MoveMany(ctx, db, []int64{id}, from, to, c)
	return len(moved) == 1, err
}

// MoveMany is Move for many records sharing one change; it returns the ids that moved.
func (m *Machine) MoveMany(ctx context.Context, db DB, ids []int64, from, to Status, c Change) ([]int64, error) {
	if slices.Contains(m.Waiting, to) {
		var due *time.Time
		if !c.Due.IsZero() {
			due = &c.Due
		}
		return m.move(ctx, db, ids, from, to, c, "next_attempt_at = $9", due)
	}
	return m.move(ctx, db, ids, from, to, c, "")
}

// waits reports whether records in s wait for their next_attempt_at (see Machine.Waiting).
func (m *Machine) waits(s Status) bool {
	return (m.Retry != nil && s == m.Retry.Status) || slices.Contains(m.Waiting, s)
}

// move is MoveMany that also sets more columns in the same statement: set is a list of
// assignments whose arguments (setArgs) are numbered from $9.
func (m *Machine) move(ctx context.Context, db DB, ids []int64, from, to Status, c Change, set string, setArgs ...any) ([]int64, error) {
	if err := m.check(from, to, c.Manual); err != nil {
		return nil, err
	}
	lastError := "NULLIF($5, '')"
	if c.Manual {
		lastError = "last_error"
	}
	attempt := 0
	if c.Attempt {
		attempt = 1
	}
	// A move names its records by id: the primary key is the only good way to them. id = ANY(...)
	// keeps the planner there where a join against unnest() does not, and the status is compared
	// as an expression (statusExpr) that the (status, id) index cannot serve: with statistics
	// taken before a step filled a status, or a generic plan, the planner otherwise read that
	// status's whole range of the index at every move, a cost growing with the backlog (the
	// normalize step's moves out of a crowded status, issue 34).
	if set != "" {
		set = ", " + set
	}
	side, sideArgs := m.sideColumns(c, 9+len(setArgs))
	set += side
	setArgs = append(setArgs, sideArgs...)
	sql := fmt.Sprintf(`
WITH moved AS (
    UPDATE %[1]s SET status = $3, attempts = attempts + $4, last_error = %[2]s, status_changed_at = now()%[3]s
    WHERE id = ANY($1) AND %[4]s = $2
    RETURNING id
), logged AS (
    INSERT INTO status_history (machine, record_id, from_status, to_status, reason, actor, run_id)
    SELECT $6, id, $2, $3, $5, $7, NULLIF($8, 0) FROM moved
)
SELECT id FROM moved ORDER BY id`, m.table(), lastError, set, statusExpr)
	args := append([]any{ids, string(from), string(to), attempt, c.Reason, m.Name, c.Actor, c.RunID}, setArgs...)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("move %s %v from %s to %s: %w", m.Name, ids, from, to, err)
	}
	moved, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("move %s %v from %s to %s: %w", m.Name, ids, from, to, err)
	}
	return moved, nil
}

func (m *Machine) check(from, to Status, manual bool) error {
	if manual && !m.AllowsManual(from, to) {
		allowed := m.ManualTargets(from)
		if len(allowed) == 0 {
			return fmt.Errorf("%s: %s -> %s by hand: %w (nothing may be moved out of %s by hand)", m.Name, from, to, ErrTransition, from)
		}
		return fmt.Errorf("%s: %s -> %s by hand: %w (from %s you may move to: %s)", m.Name, from, to, ErrTransition, from, joinStatuses(allowed))
	}
	if !manual && !m.AllowsAuto(from, to) {
		return fmt.Errorf("%s: %s -> %s: %w", m.Name, from, to, ErrTransition)
	}
	return nil
}

// Current returns a record's status; pgx.ErrNoRows (wrapped) when there is no such record.
func (m *Machine) Current(ctx context.Context, db DB, id int64) (Status, error) {
	var s string
	err := db.QueryRow(ctx, fmt.Sprintf("SELECT status FROM %s WHERE id = $1", m.table()), id).Scan(&s)
	if err != nil {
		return "", fmt.Errorf("%s record %d: %w", m.Name, id, err)
	}
	return Status(s), nil
}

// Count is the number of records in one status (and scope value, for scoped machines).
type Count struct {
	Scope  string
	Status Status
	N      int64
}

// Counts returns the number of records per status (per scope value and status for scoped
// machines), including zero counts for every status so reports show the whole machine.
func (m *Machine) Counts(ctx context.Context, db DB) ([]Count, error) {
	scope := "''"
	if m.Scope != "" {
		scope = pgx.Identifier{m.Scope}.Sanitize()
	}
	sql := fmt.Sprintf("SELECT %[1]s::text, status, count(*) FROM %[2]s GROUP BY 1, 2", scope, m.table())
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("count %s: %w", m.Name, err)
	}
	got := map[string]map[Status]int64{}
	var scopes []string
	for rows.Next() {
		var c Count
		var s string
		if err := rows.Scan(&c.Scope, &s, &c.N); err != nil {
			rows.Close()
			return nil, fmt.Errorf("count %s: %w", m.Name, err)
		}
		if got[c.Scope] == nil {
			got[c.Scope] = map[Status]int64{}
			scopes = append(scopes, c.Scope)
		}
		got[c.Scope][Status(s)] = c.N
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count %s: %w", m.Name, err)
	}
	if m.Scope == "" && len(scopes) == 0 {
		scopes = []string{""}
	}
	slices.Sort(scopes)
	var out []Count
	for _, sc := range scopes {
		for _, st := range m.Statuses {
			out = append(out, Count{Scope: sc, Status: st, N: got[sc][st]})
		}
	}
	return out, nil
}

// Reason is how many records share one last_error in one status.
type Reason struct {
	Status Status
	Reason string
	N      int64
}

// TopReasons returns the most common last_error values among records in the given statuses.
func (m *Machine) TopReasons(ctx context.Context, db DB, statuses []Status, limit int) ([]Reason, error) {
	names := make([]string, len(statuses))
	for i, s := range statuses {
		names[i] = string(s)
	}
	sql := fmt.Sprintf(`SELECT status, coalesce(last_error, ''), count(*) FROM %s
WHERE status = ANY($1) GROUP BY 1, 2 ORDER BY 3 DESC, 2 LIMIT $2`, m.table())
	rows, err := db.Query(ctx, sql, names, limit)
	if err != nil {
		return nil, fmt.Errorf("reasons %s: %w", m.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Reason, error) {
		var x Reason
		var s string
		err := r.Scan(&s, &x.Reason, &x.N)
		x.Status = Status(s)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("reasons %s: %w", m.Name, err)
	}
	return out, nil
}

// HistoryEntry is one recorded move of a record.
type HistoryEntry struct {
	From, To  Status
	Reason    string
	Actor     string
	RunID     int64
	ChangedAt time.Time
}

// History returns every recorded move of one record, oldest first.
func (m *Machine) History(ctx context.Context, db DB, id int64) ([]HistoryEntry, error) {
	rows, err := db.Query(ctx, `SELECT from_status, to_status, reason, actor, coalesce(run_id, 0), changed_at
FROM status_history WHERE machine = $1 AND record_id = $2 ORDER BY id`, m.Name, id)
	if err != nil {
		return nil, fmt.Errorf("history %s %d: %w", m.Name, id, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (HistoryEntry, error) {
		var h HistoryEntry
		var from, to string
		err := r.Scan(&from, &to, &h.Reason, &h.Actor, &h.RunID, &h.ChangedAt)
		h.From, h.To = Status(from), Status(to)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("history %s %d: %w", m.Name, id, err)
	}
	return out, nil
}

// Resolve maps the natural keys of records in one scope (see Machine.Key) to their ids. Keys
// with no record are missing from the map.
func (m *Machine) Resolve(ctx context.Context, db DB, scope string, keys []string) (map[string]int64, error) {
	if m.Scope == "" || m.Key == "" {
		return nil, fmt.Errorf("%s records have no scope and key to look them up by; use their ids", m.Name)
	}
	sql := fmt.Sprintf("SELECT %s, id FROM %s WHERE %s = $1 AND %s = ANY($2)",
		pgx.Identifier{m.Key}.Sanitize(), m.table(), pgx.Identifier{m.Scope}.Sanitize(), pgx.Identifier{m.Key}.Sanitize())
	rows, err := db.Query(ctx, sql, scope, keys)
	if err != nil {
		return nil, fmt.Errorf("resolve %s %s keys: %w", m.Name, scope, err)
	}
	out := map[string]int64{}
	var key string
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&key, &id}, func() error {
		out[key] = id
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resolve %s %s keys: %w", m.Name, scope, err)
	}
	return out, nil
}

func (m *Machine) table() string { return pgx.Identifier{m.Table}.Sanitize() }

func joinStatuses(ss []Status) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
