package social

import (
	"context"
	"fmt"
	"time"

	"github.com/ingest-dev/ingest/internal/status"
)

// PartitionsAhead is how many months of raw partitions beyond the current one every sync
// command makes sure exist, so that a run crossing a month boundary never finds none.
const PartitionsAhead = 2

// EnsurePartitions creates the raw store's monthly partitions from this month to months ahead
// (social_raw_partitions_ahead, defined by the migration); it returns how many it created.
func EnsurePartitions(ctx context.Context, db status.DB, months int) (int, error) {
	var n int
	if err := db.QueryRow(ctx, "SELECT social_raw_partitions_ahead($1)", months).Scan(&n); err != nil {
		return 0, fmt.Errorf("create raw partitions ahead: %w", err)
	}
	return n, nil
}

// rawPage is one response page as received, for the raw store.
type rawPage struct {
	AccountID, PostID int64 // 0 for none
	Endpoint          string
	Request           string // path and query, no token
	Cursor            string // the after cursor it was asked with
	NextCursor        string
	HasNext           bool
	Items             int
	RunID             int64
	JobID             int64 // the enrichment job of a results page; 0 for none
	Body              []byte
}

// insertRaw appends a page to the raw store and returns its id and fetch time (the partition
// key, needed to read it back by primary key).
func insertRaw(ctx context.Context, db status.DB, p rawPage) (int64, time.Time, error) {
	p.Body = cleanRawBody(p.Body)
	var id int64
	var at time.Time
	err := db.QueryRow(ctx, `INSERT INTO social_raw_pages (account_id, post_id, endpoint, request, cursor, next_cursor, has_next, items, run_id, job_id, body)
VALUES (NULLIF($1, 0), NULLIF($2, 0), $3, $4, NULLIF($5, ''), NULLIF($6, ''), $7, $8, NULLIF($9, 0), NULLIF($10, 0), $11) RETURNING id, fetched_at`,
		p.AccountID, p.PostID, p.Endpoint, p.Request, p.Cursor, p.NextCursor, p.HasNext, p.Items, p.RunID, p.JobID, p.Body).Scan(&id, &at)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store raw %s page: %w", p.Endpoint, err)
	}
	return id, at, nil
}
