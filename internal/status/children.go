package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Children wait for their parent's outcome (PickParams.Parent). These ask what that leaves: the
// children still waiting, and the parents whose children may go.

// childWhere is the condition on records of scopeValue in statuses, alias r, whose parent
// condition holds (or, with not, does not hold).
func (m *Machine) childWhere(scopeValue string, statuses []Status, parent ParentPick, not bool) (string, []any) {
	args := []any{statusNames(statuses)}
	where := "r.status = ANY($1)"
	if m.Scope != "" {
		args = append(args, scopeValue)
		where += fmt.Sprintf(" AND r.%s = $%d", pgx.Identifier{m.Scope}.Sanitize(), len(args))
	}
	cond, more := parent.condition(len(args) + 1)
	if not {
		cond = "NOT " + cond
	}
	return where + " AND " + cond, append(args, more...)
}

// CountWaiting counts the records of scopeValue in statuses whose parent is not in
// parent.Statuses: the children a pick with that parent condition leaves behind.
func (m *Machine) CountWaiting(ctx context.Context, db DB, scopeValue string, statuses []Status, parent ParentPick) (int64, error) {
	where, args := m.childWhere(scopeValue, statuses, parent, true)
	var n int64
	if err := db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s r WHERE %s", m.table(), where), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s waiting for their parent: %w", m.Name, err)
	}
	return n, nil
}

// Parents returns, in order, the distinct parent keys (parent.Column) of the records of
// scopeValue in statuses whose parent is in parent.Statuses: for pipelines that send one
// parent's children together and in their own order.
func (m *Machine) Parents(ctx context.Context, db DB, scopeValue string, statuses []Status, parent ParentPick) ([]string, error) {
	where, args := m.childWhere(scopeValue, statuses, parent, false)
	col := pgx.Identifier{parent.Column}.Sanitize()
	rows, err := db.Query(ctx, fmt.Sprintf("SELECT DISTINCT r.%s::text FROM %s r WHERE %s ORDER BY 1", col, m.table(), where), args...)
	if err != nil {
		return nil, fmt.Errorf("parents of %s: %w", m.Name, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("parents of %s: %w", m.Name, err)
	}
	return out, nil
}

// ChildPick selects the children of one parent that a pipeline sends in an order of their own
// (a chat's messages, oldest first).
type ChildPick struct {
	// ScopeValue limits the pick to one value of Machine.Scope (required when it has one).
	ScopeValue string
	// Column holds the parent's key (as ParentPick.Column); Key is the parent's.
	Column, Key string
	// Statuses: children in any of these are picked.
	Statuses []Status
	// Order is the SQL expression over the table's columns the children are sent in (ties go by
	// id); empty means id order. It comes from the pipeline's code, never from input.
	Order string
}

// PickChildren returns the ids of one parent's children in p.Statuses, in p.Order.
func (m *Machine) PickChildren(ctx context.Context, db DB, p ChildPick) ([]int64, error) {
	args := []any{statusNames(p.Statuses), p.Key}
	where := fmt.Sprintf("status = ANY($1) AND %s = $2", pgx.Identifier{p.Column}.Sanitize())
	if m.Scope != "" {
		args = append(args, p.ScopeValue)
		where += fmt.Sprintf(" AND %s = $3", pgx.Identifier{m.Scope}.Sanitize())
	}
	order := "id"
	if p.Order != "" {
		order = p.Order + ", id"
	}
	rows, err := db.Query(ctx, fmt.Sprintf("SELECT id FROM %s WHERE %s ORDER BY %s", m.table(), where, order), args...)
	if err != nil {
		return nil, fmt.Errorf("pick %s of %s: %w", m.Name, p.Key, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pick %s of %s: %w", m.Name, p.Key, err)
	}
	return ids, nil
}
