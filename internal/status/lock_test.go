package status_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/status"
)

func TestLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	first, err := status.AcquireLock(ctx, cfg, "extract things")
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := first.Check(ctx); err != nil {
		t.Fatalf("check held lock: %v", err)
	}

	_, err = status.AcquireLock(ctx, cfg, "extract things")
	var locked *status.LockedError
	if !errors.As(err, &locked) || !errors.Is(err, status.ErrLocked) {
		t.Fatalf("second lock = %v, want *LockedError", err)
	}
	if !strings.Contains(locked.Holder, "ingest extract things") || !strings.Contains(err.Error(), "already running") {
		t.Errorf("locked error does not name the holder: %v", err)
	}

	// A different command is not blocked.
	other, err := status.AcquireLock(ctx, cfg, "discover things")
	if err != nil {
		t.Fatalf("other command: %v", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := status.AcquireLock(ctx, cfg, "extract things")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	defer again.Release(ctx)

	// Killing the lock's backend is noticed by the watcher: the run would be stopped.
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'ingest extract things%'`); err != nil {
		t.Fatal(err)
	}
	lost := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a bound for a hung test, not a timing claim
	defer cancel()
	go again.Watch(wctx, 50*time.Millisecond, func(err error) { lost <- err })
	select {
	case err := <-lost:
		if !errors.Is(err, status.ErrLockLost) {
			t.Errorf("lost = %v, want ErrLockLost", err)
		}
	case <-wctx.Done():
		t.Fatal("watcher did not notice the terminated lock connection")
	}
}

// TestLockOfASilentHolderIsFreed: the holder's connection goes through a relay that stops
// forwarding (its node vanished, the network is cut) while the TCP connection stays open, so
// only the session's own dead-peer timeout can free the lock. The server must end that session
// and the next run must get the lock; the silent holder's watcher notices too.
func TestLockOfASilentHolderIsFreed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.URL(t)
	relay := dbtest.NewRelay(t, url)
	viaRelay, err := pgx.ParseConfig(relay.URL())
	if err != nil {
		t.Fatal(err)
	}
	direct, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	// Production uses DefaultDeadPeerTimeout (45 s); 10 s keeps the test short and leaves the
	// watcher (every 2 s) a wide margin on a busy machine, where a live holder's session must
	// never look dead.
	held, err := status.AcquireLockWith(ctx, viaRelay, "extract silent", status.LockOptions{DeadPeerTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("lock through the relay: %v", err)
	}
	defer held.Release(ctx)
	lost := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Each check may take as long as the dead-peer bound (10 s) before it counts as a loss.
	go held.Watch(wctx, 2*time.Second, func(err error) { lost <- err })
	var timeout string
	if err := directQuery(ctx, direct, `SELECT setting FROM pg_settings WHERE name = 'idle_session_timeout'`, &timeout); err != nil || timeout != "0" {
		t.Errorf("idle_session_timeout leaked to other sessions: %q, %v", timeout, err)
	}
	if _, err := status.AcquireLock(ctx, direct, "extract silent"); !errors.Is(err, status.ErrLocked) {
		t.Fatalf("second lock while the first is alive = %v, want ErrLocked", err)
	}

	relay.Freeze()
	deadline := time.Now().Add(2 * time.Minute) // a bound for a hung test, not a timing claim
	for {
		next, err := status.AcquireLock(ctx, direct, "extract silent")
		if err == nil {
			next.Release(ctx)
			break
		}
		if !errors.Is(err, status.ErrLocked) {
			t.Fatalf("lock after the holder went silent: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the silent holder's lock was never freed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case err := <-lost:
		if !errors.Is(err, status.ErrLockLost) {
			t.Errorf("lost = %v, want ErrLockLost", err)
		}
	case <-time.After(2 * time.Minute): // a bound for a hung test, not a timing claim
		t.Error("the silent holder's watcher never noticed")
	}
}

func directQuery(ctx context.Context, cfg *pgx.ConnConfig, sql string, dest any) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest)
}

// A lock set: commands that take a lock shared run side by side, and keep out the command
// that takes it exclusive, and the other way round; every refusal names the lock and its holder.
func TestLockSetSharedAndExclusive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	shared := status.LockOptions{Also: []status.SetLock{{Name: "pipeline", Shared: true}}}
	exclusive := status.LockOptions{Also: []status.SetLock{{Name: "pipeline"}}}

	users, err := status.AcquireLockWith(ctx, cfg, "pipeline users", shared)
	if err != nil {
		t.Fatalf("users: %v", err)
	}
	groups, err := status.AcquireLockWith(ctx, cfg, "pipeline groups", shared)
	if err != nil {
		t.Fatalf("groups beside users: %v", err)
	}
	if err := users.Check(ctx); err != nil {
		t.Fatalf("check a held set: %v", err)
	}
	_, err = status.AcquireLockWith(ctx, cfg, "pipeline all", exclusive)
	var locked *status.LockedError
	if !errors.As(err, &locked) || !errors.Is(err, status.ErrLocked) {
		t.Fatalf("exclusive while shared holders run = %v, want *LockedError", err)
	}
	if locked.Name != "pipeline" || !strings.Contains(locked.Holder, "ingest pipeline users") ||
		!strings.Contains(locked.Holder, "ingest pipeline groups") || !strings.Contains(err.Error(), "`ingest pipeline all` cannot run now") {
		t.Errorf("refusal does not name the lock and its holders: %v", err)
	}
	// The refused run holds nothing of its set: its own lock is free again.
	probe, err := status.AcquireLock(ctx, cfg, "pipeline all")
	if err != nil {
		t.Fatalf("the refused run kept its own lock: %v", err)
	}
	if err := probe.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*status.Lock{users, groups} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	all, err := status.AcquireLockWith(ctx, cfg, "pipeline all", exclusive)
	if err != nil {
		t.Fatalf("exclusive once the shared holders are gone: %v", err)
	}
	defer all.Release(ctx)
	_, err = status.AcquireLockWith(ctx, cfg, "pipeline users", shared)
	if !errors.As(err, &locked) || locked.Name != "pipeline" || !strings.Contains(locked.Holder, "ingest pipeline all") {
		t.Fatalf("shared while the exclusive holder runs = %v, want a refusal naming it", err)
	}
	// The shared run's own lock was given back with the refusal.
	if probe, err := status.AcquireLock(ctx, cfg, "pipeline users"); err != nil {
		t.Fatalf("the refused run kept its own lock: %v", err)
	} else if err := probe.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A set whose connection died is lost as a whole.
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'ingest pipeline all%'`); err != nil {
		t.Fatal(err)
	}
	if err := all.Check(ctx); !errors.Is(err, status.ErrLockLost) {
		t.Errorf("check after the connection died = %v, want ErrLockLost", err)
	}
}

// A lock set that refuses other locks: runs of one family member ("fam shards 4", shared) run
// side by side, and a run of another member is refused while one of them runs, and the other
// way round, naming the lock it refuses and its holder; a holder in another database refuses
// nothing.
func TestLockSetRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	member := func(n int) status.LockOptions {
		s := status.SetLock{Name: fmt.Sprintf("fam shards %d", n), Shared: true}
		for m := 2; m <= 4; m++ {
			if m != n {
				s.Refuses = append(s.Refuses, fmt.Sprintf("fam shards %d", m))
			}
		}
		return status.LockOptions{Also: []status.SetLock{s}}
	}
	first, err := status.AcquireLockWith(ctx, cfg, "fam shard 0/4", member(4))
	if err != nil {
		t.Fatalf("shard 0/4: %v", err)
	}
	second, err := status.AcquireLockWith(ctx, cfg, "fam shard 1/4", member(4))
	if err != nil {
		t.Fatalf("shard 1/4 beside 0/4: %v", err)
	}
	_, err = status.AcquireLockWith(ctx, cfg, "fam shard 0/2", member(2))
	var locked *status.LockedError
	if !errors.As(err, &locked) || !errors.Is(err, status.ErrLocked) {
		t.Fatalf("shard 0/2 while shards of 4 run = %v, want *LockedError", err)
	}
	if locked.Name != "fam shards 4" || locked.Excludes != "fam shards 2" || !strings.Contains(locked.Holder, "ingest fam shard 0/4") ||
		!strings.Contains(locked.Holder, "ingest fam shard 1/4") ||
		!strings.Contains(err.Error(), "`ingest fam shard 0/2` cannot run now: another run holds the lock \"fam shards 4\"") {
		t.Errorf("refusal does not name the refused lock and its holders: %v", err)
	}
	// The refused run holds nothing of its set.
	if probe, err := status.AcquireLockWith(ctx, cfg, "fam shard 0/2", status.LockOptions{Also: []status.SetLock{{Name: "fam shards 2"}}}); err != nil {
		t.Fatalf("the refused run kept a lock of its set: %v", err)
	} else if err := probe.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The same names held in another database refuse nothing there.
	other, err := pgx.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := status.AcquireLockWith(ctx, other, "fam shard 0/2", member(2)); err != nil {
		t.Errorf("shard 0/2 in another database: %v", err)
	} else if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	for _, l := range []*status.Lock{first, second} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	two, err := status.AcquireLockWith(ctx, cfg, "fam shard 0/2", member(2))
	if err != nil {
		t.Fatalf("shard 0/2 once the shards of 4 are gone: %v", err)
	}
	defer two.Release(ctx)
	if err := two.Check(ctx); err != nil {
		t.Errorf("check a set with refusals: %v", err)
	}
	_, err = status.AcquireLockWith(ctx, cfg, "fam shard 3/4", member(4))
	if !errors.As(err, &locked) || locked.Name != "fam shards 2" || !strings.Contains(locked.Holder, "ingest fam shard 0/2") {
		t.Fatalf("shard 3/4 while a shard of 2 runs = %v, want a refusal naming it", err)
	}
}
