package status_test

import (
	"context"
	"errors"
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
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
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
