package bitrix_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
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
	v := newEnv(t, bitrixfake.Options{Users: 5, Seed: 19})
	clock := &fakeClock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	policy := retry.Default()
	policy.Sleep = clock.Sleep
	timed := func(c *engine.Config) { c.Now, c.RetryPolicy = clock.Now, policy }
	v.phases(v.engine(timed), bitrix.Users, "get")
	ids := v.portal.UserIDs()
	poison := strconv.Itoa(ids[2])
	target := &dyingTarget{Target: v.client, poison: "source:users:" + poison}
	e := v.engine(timed, func(c *engine.Config) { c.Target = target })

	// The first set died during its one call, with all five users in it.
	all := make([]int64, len(ids))
	for i, id := range ids {
		all[i] = v.record(bitrix.Users, strconv.Itoa(id)).ID
	}
	if started, err := engine.Machine.StartAttempts(v.ctx, v.pool, all, []status.Status{engine.StatusNew}, 0); err != nil || len(started) != 5 {
		t.Fatalf("start = %v, %v", started, err)
	}
	poisonID := v.record(bitrix.Users, poison).ID
	// Each later set counts the death before it, sends the records alone, and dies on the poison
	// record again, until the retries are used up (retry.Default: 3 retries, 4 attempts).
	for run := 1; run <= 4; run++ {
		st, err := e.Set(v.ctx, bitrix.Users)
		wantUnfinished := map[bool]int{true: 5, false: 1}[run == 1]
		if st[bitrix.Users] == nil || st[bitrix.Users].Unfinished != wantUnfinished {
			t.Errorf("set %d: stats %+v, want %d unfinished attempts counted", run, st[bitrix.Users], wantUnfinished)
		}
		if run < 4 {
			if !errors.Is(err, errDied) {
				t.Fatalf("set %d: %v, want it to die on the poison record", run, err)
			}
			if ok, err := engine.Machine.StartAttempt(v.ctx, v.pool, poisonID, engine.ErrorRetry, 0); err != nil || !ok {
				t.Fatalf("set %d: leave the attempt open: %v %v", run, ok, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("set %d: %v", run, err)
		}
	}
	r := v.record(bitrix.Users, poison)
	if r.Status != engine.ImportErr || r.Attempts != 4 || !strings.HasPrefix(r.LastError, "gave up after 4 attempts: attempt started ") ||
		!strings.Contains(r.LastError, "never finished: the process died during it") {
		t.Errorf("poison record: %s after %d attempts, %q", r.Status, r.Attempts, r.LastError)
	}
	if got := v.count(`SELECT count(*) FROM bitrix_records WHERE id = $1 AND reason_code = 'attempt_unfinished' AND attempt_started_at IS NULL`, poisonID); got != 1 {
		t.Error("the poison record does not carry the code attempt_unfinished with its attempt closed")
	}
	for _, id := range ids {
		if s := strconv.Itoa(id); s != poison {
			if r := v.record(bitrix.Users, s); r.Status != engine.ImportOK || r.Attempts != 2 {
				t.Errorf("user %s: %s after %d attempts, want IMPORT_OK after the death and one more", s, r.Status, r.Attempts)
			}
		}
	}
	for i, keys := range target.calls {
		if len(keys) != 1 {
			t.Errorf("call %d sent %v: records whose attempt died go alone", i, keys)
		}
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE attempt_started_at IS NOT NULL`); n != 0 {
		t.Errorf("%d attempts left open", n)
	}
}

// A stop during the import call is not the records' fault: their attempts end unrecorded and the
// next set sends them as if nothing happened.
func TestSetStopEndsItsAttemptsUncounted(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 3, Seed: 20})
	e := v.engine()
	v.phases(e, bitrix.Users, "get")
	ctx, cancel := context.WithCancel(v.ctx)
	stopping := v.engine(func(c *engine.Config) { c.Target = stoppingTarget{Target: v.client, stop: cancel} })
	if _, err := stopping.Set(ctx, bitrix.Users); err == nil {
		t.Fatal("a stopped set reported no error")
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE attempt_started_at IS NOT NULL OR status <> 'NEW'`); n != 0 {
		t.Fatalf("%d records moved or with an attempt open after the stop", n)
	}
	st, err := e.Set(v.ctx, bitrix.Users)
	if err != nil || st[bitrix.Users].Unfinished != 0 || st[bitrix.Users].Imported != 3 {
		t.Errorf("next set: %+v, %v; want 3 imported and nothing counted", st[bitrix.Users], err)
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
