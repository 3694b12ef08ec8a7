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
