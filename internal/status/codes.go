package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// CodeCount is how many records of one status (and scope value) carry one reason code.
type CodeCount struct {
	Scope  string
	Status Status
	Code   string
	N      int64
}

// CodeCounts returns, for a machine with ReasonCodes, how many records of each status carry
// each reason code, ordered by scope, status, count (most first) and code; records without a
// code are not listed (their number is the status's count less these). A machine without
// ReasonCodes has none.
func (m *Machine) CodeCounts(ctx context.Context, db DB) ([]CodeCount, error) {
	if !m.ReasonCodes {
		return nil, nil
	}
	scope := "''"
	if m.Scope != "" {
		scope = pgx.Identifier{m.Scope}.Sanitize()
	}
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT %[1]s::text, status, reason_code, count(*) FROM %[2]s
WHERE reason_code IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 4 DESC, 3`, scope, m.table()))
	if err != nil {
		return nil, fmt.Errorf("count the reason codes of %s: %w", m.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CodeCount, error) {
		var c CodeCount
		var s string
		err := r.Scan(&c.Scope, &s, &c.Code, &c.N)
		c.Status = Status(s)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count the reason codes of %s: %w", m.Name, err)
	}
	return out, nil
}

// CodeTally is one reason code of a status and how many of its records carry it, as reports
// show it (JSON "reason_codes").
type CodeTally struct {
	Code  string `json:"code"`
	Count int64  `json:"count"`
}

// StatusKey names one status of one scope value ("" for an unscoped machine).
type StatusKey struct {
	Scope  string
	Status Status
}

// TallyCodes groups counts by scope and status, each status's codes most common first.
func TallyCodes(cs []CodeCount) map[StatusKey][]CodeTally {
	out := map[StatusKey][]CodeTally{}
	for _, c := range cs {
		k := StatusKey{Scope: c.Scope, Status: c.Status}
		out[k] = append(out[k], CodeTally{Code: c.Code, Count: c.N})
	}
	return out
}
