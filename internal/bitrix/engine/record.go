package engine

import "context"

// RecordDetail returns one record of the entity by its source id, with where it is on the
// target and when it was read, changed and acknowledged: what `show` prints for a person fixing
// the record by hand. The error wraps pgx.ErrNoRows when no such record has been read.
func (e *Engine) RecordDetail(ctx context.Context, entity, sourceID string) (RecordDetail, error) {
	return e.store().recordDetail(ctx, entity, sourceID)
}
