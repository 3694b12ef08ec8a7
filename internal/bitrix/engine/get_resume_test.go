package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// cancelOnBatch stops a get during its nth batch of a method, as a crash would: that batch's
// answers are never stored.
type cancelOnBatch struct {
	engine.Source
	method string
	n      int
	cancel context.CancelFunc

	mu    sync.Mutex
	calls int
}

func (c *cancelOnBatch) Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error) {
	if len(cmds) > 0 && cmds[0].Method == c.method {
		c.mu.Lock()
		c.calls++
		stop := c.calls == c.n
		c.mu.Unlock()
		if stop {
			c.cancel()
			return nil, context.Cause(ctx)
		}
	}
	return c.Source.Batch(ctx, cmds, halt)
}

// A get interrupted while it walks keys, or while it lists record by record, resumes where it
// stopped: the rerun reads only what was not stored, and together they read what one whole get
// reads.
func TestGetResumesWalksAndPerRecordListings(t *testing.T) {
	t.Parallel()
	portal := bitrixfake.Options{Users: 150, Groups: 8, Posts: 140, Companies: 260, Seed: 14}
	tests := []struct {
		name, command, child, method string
		before                       []string // what the command's records refer to
	}{
		{"a walk per key", posts, postAudiences, "log.blogpost.get", []string{people, teams}},
		{"a listing per record", enginetest.FirmNotes, enginetest.FirmNotes, "crm.timeline.comment.list", []string{people, enginetest.Firms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// What one whole get reads.
			whole := newWorld(t, portal)
			for _, ent := range append(tt.before, tt.command) {
				whole.Phases(whole.Engine(), ent, "get")
			}
			want := whole.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, tt.child)
			wholeCalls := whole.Portal.Stats().Requests

			w := newWorld(t, portal)
			for _, ent := range tt.before {
				w.Phases(w.Engine(), ent, "get")
			}
			ctx, cancel := context.WithCancel(w.Ctx)
			defer cancel()
			e := w.Engine(func(e *engine.Config) {
				e.Concurrency = 1
				e.Source = &cancelOnBatch{Source: w.Source, method: tt.method, n: 2, cancel: cancel}
			})
			if _, err := e.Get(ctx, tt.command); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted get = %v, want context.Canceled", err)
			}
			stored := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, tt.child)
			if stored == 0 || stored >= want {
				t.Fatalf("the interrupted get stored %d %s of %d, want some", stored, tt.child, want)
			}
			before := w.Portal.Stats().Requests
			st, err := w.Engine().Get(w.Ctx, tt.command)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Of(tt.child).Inserted; got != want-stored {
				t.Errorf("the rerun stored %d %s, want the %d not stored yet", got, tt.child, want-stored)
			}
			if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE entity = $1`, tt.child); n != want {
				t.Errorf("%d %s stored, want %d as one whole get", n, tt.child, want)
			}
			if calls := w.Portal.Stats().Requests - before; calls >= wholeCalls {
				t.Errorf("the rerun made %d requests, a whole get %d: it read again what was stored", calls, wholeCalls)
			}
			if n := w.Count(`SELECT count(*) FROM (SELECT cursor FROM bitrix_page_log WHERE entity = $1 GROUP BY pass, cursor HAVING count(*) > 1) d`, tt.child); n != 0 {
				t.Errorf("%d pages logged twice in one pass", n)
			}
			// The next full get is a new pass that finds nothing new (a get of records per owner
			// after a complete pass is a delta, which reads the owners read since: none here).
			st, err = w.Engine(func(c *engine.Config) { c.Full = true }).Get(w.Ctx, tt.command)
			if err != nil || st.Of(tt.child).Inserted != 0 || st.Of(tt.child).Unchanged != want {
				t.Errorf("third get = %+v, %v; want %d unchanged %s", st.Of(tt.child), err, want, tt.child)
			}
		})
	}
}
