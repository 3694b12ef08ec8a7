package status

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
)

// Listed is a group of records that share a status (and scope value) and a reason: how many
// there are, and the ids of the first of them, as a person passes them to `ingest show` or
// `ingest status set`: the key (Machine.Key) where the machine has one, the record id otherwise.
type Listed struct {
	Scope  string   `json:"scope,omitempty"`
	Status Status   `json:"status"`
	Reason string   `json:"reason"`
	Count  int64    `json:"count"`
	IDs    []string `json:"ids"`
}

// Listing is the records of some statuses of a machine, grouped by status and reason, most
// common first, with ids up to a limit.
type Listing struct {
	Statuses []Status `json:"statuses"`
	Groups   []Listed `json:"groups"`
	// Records counts every record of those statuses, listed or not; Unlisted and
	// UnlistedGroups count the records and groups the limit left out.
	Records        int64 `json:"records"`
	Unlisted       int64 `json:"unlisted"`
	UnlistedGroups int64 `json:"unlisted_groups"`
}

// List groups the records in statuses by scope value, status and last_error, the largest groups
// first: at most limit groups, each with at most limit ids in id order (0: every one). The counts
// are exact, of the groups and of what the limit left out.
func (m *Machine) List(ctx context.Context, db DB, statuses []Status, limit int) (Listing, error) {
	out := Listing{Statuses: statuses, Groups: []Listed{}}
	if len(statuses) == 0 {
		return out, nil
	}
	names := make([]string, len(statuses))
	for i, s := range statuses {
		names[i] = string(s)
	}
	n := limit
	if n <= 0 {
		n = math.MaxInt32
	}
	scope, key := "''::text", "id::text"
	if m.Scope != "" {
		scope = pgx.Identifier{m.Scope}.Sanitize() + "::text"
	}
	if m.Key != "" {
		key = pgx.Identifier{m.Key}.Sanitize() + "::text"
	}
	var groups int64
	err := db.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), count(DISTINCT (%s, status, coalesce(last_error, ''))) FROM %s WHERE status = ANY($1)`,
		scope, m.table()), names).Scan(&out.Records, &groups)
	if err != nil {
		return out, fmt.Errorf("list %s records: %w", m.Name, err)
	}
	rows, err := db.Query(ctx, fmt.Sprintf(`SELECT %[1]s, status, coalesce(last_error, ''), count(*), (array_agg(%[2]s ORDER BY id))[1:$2]
FROM %[3]s WHERE status = ANY($1) GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3 LIMIT $2`, scope, key, m.table()), names, n)
	if err != nil {
		return out, fmt.Errorf("list %s records: %w", m.Name, err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Listed, error) {
		var l Listed
		var s string
		err := r.Scan(&l.Scope, &s, &l.Reason, &l.Count, &l.IDs)
		l.Status = Status(s)
		return l, err
	})
	if err != nil {
		return out, fmt.Errorf("list %s records: %w", m.Name, err)
	}
	out.Groups = append(out.Groups, all...)
	out.Unlisted = out.Records
	for _, l := range all {
		out.Unlisted -= int64(len(l.IDs))
	}
	out.UnlistedGroups = groups - int64(len(out.Groups))
	return out, nil
}
