package social

import (
	"context"

	"github.com/ingest-dev/ingest/internal/status"
)

// countUnfinished records, as a sync command starts, every attempt of an earlier run of the
// shard (shard column column) that never finished as a failed attempt
// (status.Machine.FailUnfinished): its process died during a profile read or a comment walk.
// A record that kills the process every time ends failed instead of stopping every later sync.
func (s *Syncer) countUnfinished(ctx context.Context, m *status.Machine, picked []status.Status, column string, st *Stats) error {
	out, err := m.FailUnfinished(ctx, s.Pool, status.UnfinishedParams{Statuses: picked, Shard: s.shard(column), Now: s.now(),
		Policy: s.RetryPolicy}, s.change(""))
	if err != nil {
		return err
	}
	for _, u := range out {
		st.Unfinished++
		st.outcome(string(u.To))
		s.Log.Warn("attempt of an earlier run never finished", "machine", m.Name, "id", u.ID, "started_at", u.StartedAt,
			"run_id", u.RunID, "status", u.To, "reason", u.Reason)
	}
	return nil
}

// attempt is status.Machine.Attempt for record id of m, picked in status in, less the closing
// write when fn reports that a move of its own was committed (moved): a move ends the attempt
// in flight itself, and the write that ends it again found nothing to do, one statement a
// record (issue 34). fn's outcome is otherwise treated as Attempt treats it.
func (s *Syncer) attempt(ctx context.Context, m *status.Machine, id int64, in status.Status, fn func() (moved bool, err error)) (bool, error) {
	started, err := m.StartAttempt(ctx, s.Pool, id, in, s.RunID)
	if err != nil || !started {
		return false, err
	}
	moved, err := fn()
	if !moved && (err == nil || ctx.Err() != nil) {
		if aerr := m.AbandonAttempts(ctx, s.Pool, []int64{id}); aerr != nil && err == nil {
			err = aerr
		}
	}
	return true, err
}
