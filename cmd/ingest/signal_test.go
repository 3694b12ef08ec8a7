package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/dbtest"
)

// TestSIGTERMWithTheDatabaseStopped: the database stops while `extract habr` waits on a slow
// page. A SIGTERM then ends the process with 143 at once, both while the failed run retries
// to record its outcome and when the signal comes first (the interrupted run tries once,
// briefly: about 2 s); the next run marks the run without an outcome abandoned, as after a
// SIGKILL. Without either bound the process would wait the 30 s a failed run spends recording
// its outcome: stopTimely, half of that, leaves a busy machine room and tells the two apart.
func TestSIGTERMWithTheDatabaseStopped(t *testing.T) {
	const stopTimely = 15 * time.Second
	t.Parallel()
	b := setupCLI(t)
	b.registerFew(t, 3)
	b.slowPages(t, time.Minute)
	relay := dbtest.NewRelay(t, b.url)
	start := func() *crashtest.Child {
		c := crashtest.StartArgs(t, binary, []string{"extract", "habr"},
			"DATABASE_URL="+relay.URL(), "HABR_BASE_URL="+b.base, "LOG_FORMAT=json")
		c.WaitStderr(t, `"msg":"run started"`, 2*time.Minute)
		return c
	}
	stop := func(c *crashtest.Child, when string) {
		t.Helper()
		at := time.Now()
		c.Signal(t, syscall.SIGTERM)
		code := c.Wait(t)
		took := time.Since(at)
		t.Logf("%s: exit %d %s after the SIGTERM", when, code, took.Round(time.Millisecond))
		if code != exitSIGTERM || took > stopTimely {
			t.Fatalf("%s: exit %d %s after the SIGTERM, want %d within %s:\n%s", when, code, took, exitSIGTERM, stopTimely, c.Stderr())
		}
	}

	failed := start()
	relay.Cut()
	// The lock check finds the connection gone; the failed run retries to record its outcome.
	failed.WaitStderr(t, "cannot record the run's outcome; retrying", 2*time.Minute)
	stop(failed, "during the outcome retry")

	relay.Resume()
	interrupted := start()
	if n := b.scalar(t, "SELECT count(*) FROM runs WHERE outcome = 'abandoned'"); n != 1 {
		t.Errorf("abandoned runs = %d, want the first one", n)
	}
	relay.Cut()
	stop(interrupted, "right after the database stopped")
}
