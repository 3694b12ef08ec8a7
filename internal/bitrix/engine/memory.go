package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// A get reads a small portal in one round: every ID range's batch at once, while the bucket's
// burst lasts. Each answer is held, decoded and stored whole, so the memory a walk needs grows
// with the requests in flight times the size of a row: 100,000 records of about 735 bytes, 32
// answers at once, peak at 281 MB RSS (docs/benchmarks.md), and a portal whose rows are five
// times larger would not fit the pod's 512 MiB. The walk therefore keeps the answers it waits
// for and stores within a budget, from the rows' size as the portal sends them.

// defaultMemoryLimit is the memory a process may use when Config.MemoryLimit is 0: the limit
// of the pods in deploy/.
const defaultMemoryLimit = 512 << 20

// heldPerAnswerByte is how many bytes of the process an answer's byte costs until its rows are
// stored: the body, the rows' payloads, dates and checksums on their way to COPY, and the
// garbage collector's headroom (measured: 281 MB RSS for 32 answers of 2,500 deal rows of 735
// bytes, 59 MB of answers, over about 20 MB of a process at rest).
const heldPerAnswerByte = 4

// memoryBudget is the bytes a walk's answers in flight may hold: half the process's limit, the
// other half left to the runtime, the connection pool and the children of a page.
func (e *Engine) memoryBudget() float64 {
	return float64(e.memoryLimit) / 2
}

// rowSize keeps the mean size of the rows a walk has seen, as the portal sent them.
type rowSize struct {
	bytes, rows float64
}

// add counts rows into the mean.
func (s *rowSize) add(rows []json.RawMessage) {
	for _, r := range rows {
		s.bytes += float64(len(r))
	}
	s.rows += float64(len(rows))
}

// held is what a request for pages holds until its rows are stored; 0 while no row was seen.
func (s rowSize) held(pages int) float64 {
	if s.rows == 0 {
		return 0
	}
	return s.bytes / s.rows * float64(pages*rest.PageSize) * heldPerAnswerByte
}

// fits reports whether a request holding more bytes can go while inFlight are held: always when
// nothing is, so that a walk over huge rows still goes one request at a time.
func fits(inFlight, more, budget float64) bool {
	return inFlight == 0 || inFlight+more <= budget
}

// storedRowSize is the mean size of an entity's last stored rows, for a resumed walk to size its
// first requests by (jsonb's text spaces its keys, so it errs on the large side).
func (s Store) storedRowSize(ctx context.Context, entity string) (rowSize, error) {
	var size rowSize
	err := s.db.QueryRow(ctx, `SELECT coalesce(sum(octet_length(payload::text)), 0), count(*)
FROM (SELECT payload FROM bitrix_records WHERE entity = $1 ORDER BY id DESC LIMIT 100) AS last`, entity).Scan(&size.bytes, &size.rows)
	if err != nil {
		return size, fmt.Errorf("size %s rows: %w", entity, err)
	}
	return size, nil
}
