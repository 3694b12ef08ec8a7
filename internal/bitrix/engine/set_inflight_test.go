package engine_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/status"
)

// errDied stands for the process dying during an import call (killed, out of memory).
var errDied = errors.New("the process died")

// dyingTarget "kills the process" on every call that carries the poison key: the call ends with
// errDied, and the test leaves the batch's attempts open again, as a dead process leaves them.
type dyingTarget struct {
	engine.Target
	poison string
	calls  [][]string // the keys of every call, in order
}

func (d *dyingTarget) Import(ctx context.Context, entity string, items []importapi.Item) ([]importapi.Result, error) {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	d.calls = append(d.calls, keys)
	if slices.Contains(keys, d.poison) {
		return nil, errDied
	}
	return d.Target.Import(ctx, entity, items)
}

// A set killed during its import call leaves its batch's attempts open: the next set counts
// them as failed attempts and sends those records again, one per call, so that a record that
// kills the process every time ends in IMPORT_ERR, saying so, and its batch-mates are imported.
func TestSetCountsImportAttemptsThatNeverFinished(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 5, Seed: 19})
	clock := enginetest.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	configure := func(e *engine.Config) {
		e.Now = clock.Now
		policy := retry.Default()
		policy.Sleep = clock.Sleep
		e.RetryPolicy = policy
	}
	e := w.Engine(configure)
	w.Phases(e, people, "get")
	ids := w.Portal.UserIDs()
	poison := strconv.Itoa(ids[2])
	target := &dyingTarget{Target: w.Client, poison: "source:people:" + poison}
	e = w.Engine(configure, func(e *engine.Config) { e.Target = target })

	// The first set died during its one call, with all five people in it.
	all := make([]int64, len(ids))
	for i, id := range ids {
		all[i] = w.Record(people, strconv.Itoa(id)).ID
	}
	if started, err := engine.Machine.StartAttempts(w.Ctx, w.Pool, all, []status.Status{engine.StatusNew}, 0); err != nil || len(started) != 5 {
		t.Fatalf("start = %v, %v", started, err)
	}
	poisonID := w.Record(people, poison).ID
	// Each later set counts the death before it, sends the records alone, and dies on the poison
	// record again, until the retries are used up (retry.Default: 3 retries, 4 attempts).
	for run := 1; run <= 4; run++ {
		st, err := e.Set(w.Ctx, people)
		wantUnfinished := map[bool]int{true: 5, false: 1}[run == 1]
		if st[people] == nil || st[people].Unfinished != wantUnfinished {
			t.Errorf("set %d: stats %+v, want %d unfinished attempts counted", run, st[people], wantUnfinished)
		}
		if run < 4 {
			if !errors.Is(err, errDied) {
				t.Fatalf("set %d: %v, want it to die on the poison record", run, err)
			}
			if ok, err := engine.Machine.StartAttempt(w.Ctx, w.Pool, poisonID, engine.ErrorRetry, 0); err != nil || !ok {
				t.Fatalf("set %d: leave the attempt open: %v %v", run, ok, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("set %d: %v", run, err)
		}
	}
	r := w.Record(people, poison)
	if r.Status != engine.ImportErr || r.Attempts != 4 || !strings.HasPrefix(r.LastError, "gave up after 4 attempts: attempt started ") ||
		!strings.Contains(r.LastError, "never finished: the process died during it") {
		t.Errorf("poison record: %s after %d attempts, %q", r.Status, r.Attempts, r.LastError)
	}
	if got := w.Count(`SELECT count(*) FROM bitrix_records WHERE id = $1 AND reason_code = 'attempt_unfinished' AND attempt_started_at IS NULL`, poisonID); got != 1 {
		t.Error("the poison record does not carry the code attempt_unfinished with its attempt closed")
	}
	for _, id := range ids {
		if s := strconv.Itoa(id); s != poison {
			if r := w.Record(people, s); r.Status != engine.ImportOK || r.Attempts != 2 {
				t.Errorf("person %s: %s after %d attempts, want IMPORT_OK after the death and one more", s, r.Status, r.Attempts)
			}
		}
	}
	for i, keys := range target.calls {
		if len(keys) != 1 {
			t.Errorf("call %d sent %v: records whose attempt died go alone", i, keys)
		}
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE attempt_started_at IS NOT NULL`); n != 0 {
		t.Errorf("%d attempts left open", n)
	}
}

// A stop during the import call is not the records' fault: their attempts end unrecorded and the
// next set sends them as if nothing happened.
func TestSetStopEndsItsAttemptsUncounted(t *testing.T) {
	t.Parallel()
	w := newWorld(t, bitrixfake.Options{Users: 3, Seed: 20})
	w.Phases(w.Engine(), people, "get")
	ctx, cancel := context.WithCancel(w.Ctx)
	e := w.Engine(func(e *engine.Config) { e.Target = stoppingTarget{Target: w.Client, stop: cancel} })
	if _, err := e.Set(ctx, people); err == nil {
		t.Fatal("a stopped set reported no error")
	}
	if n := w.Count(`SELECT count(*) FROM bitrix_records WHERE attempt_started_at IS NOT NULL OR status <> 'NEW'`); n != 0 {
		t.Fatalf("%d records moved or with an attempt open after the stop", n)
	}
	st, err := w.Engine().Set(w.Ctx, people)
	if err != nil || st[people].Unfinished != 0 || st[people].Imported != 3 {
		t.Errorf("next set: %+v, %v; want 3 imported and nothing counted", st[people], err)
	}
}

// stoppingTarget stops the run (SIGTERM) during its import call.
type stoppingTarget struct {
	engine.Target
	stop context.CancelFunc
}

func (s stoppingTarget) Import(ctx context.Context, entity string, items []importapi.Item) ([]importapi.Result, error) {
	s.stop()
	<-ctx.Done()
	return nil, ctx.Err()
}
