package main

import (
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/status"
)

// TestSocialSyncLocks: an unsharded sync never runs beside a shard, nor shards of two counts
// beside each other, whichever step each runs; shards of one count run side by side. Each
// refusal exits 75 naming the holder. The runs that exclude each other fence each other out.
func TestSocialSyncLocks(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	gsrv := httptest.NewServer(graphfake.New(graphfake.Options{Seed: 5, NoFixtureAccounts: true}))
	defer gsrv.Close()
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	run := func(args ...string) (int, string) {
		t.Helper()
		cmd, _, stderr := b.command(args...)
		cmd.Env = append(cmd.Env, "SOCIAL_GRAPH_URL="+gsrv.URL+"/v23.0", "SOCIAL_TOKEN_KEY="+key, "SOCIAL_BATCH_PAUSE=0s")
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	cfg, err := pgx.ParseConfig(b.url)
	if err != nil {
		t.Fatal(err)
	}
	// hold takes the lock set a run of shard index of count shards takes, as that run would.
	hold := func(index, shards int) *status.Lock {
		t.Helper()
		set := socialLocks(index, shards)
		l, err := status.AcquireLockWith(b.ctx, cfg, set.name, status.LockOptions{Also: set.also})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	shard := hold(1, 4)
	if code, out := run("social", "sync", "profiles"); code != exitLocked || !strings.Contains(out, "ingest social sync shard 1/4 (") {
		t.Errorf("unsharded sync while shard 1/4 runs = exit %d, want %d naming the shard\n%s", code, exitLocked, out)
	}
	if code, out := run("social", "sync", "profiles", "--shards", "4", "--shard", "0"); code != 0 {
		t.Errorf("shard 0/4 beside shard 1/4 = exit %d, want 0\n%s", code, out)
	}
	if code, out := run("social", "normalize", "--shards", "2", "--shard", "0"); code != exitLocked ||
		!strings.Contains(out, `another run holds the lock \"social sync shards 4\"`) || !strings.Contains(out, "ingest social sync shard 1/4 (") {
		t.Errorf("shard 0/2 while shard 1/4 runs = exit %d, want %d naming the other count and its holder\n%s", code, exitLocked, out)
	}
	if err := shard.Release(b.ctx); err != nil {
		t.Fatal(err)
	}

	whole := hold(0, 1)
	if code, out := run("social", "sync", "posts", "--shards", "4", "--shard", "2"); code != exitLocked || !strings.Contains(out, "ingest social sync (") {
		t.Errorf("shard 2/4 while the unsharded sync runs = exit %d, want %d naming it\n%s", code, exitLocked, out)
	}
	if err := whole.Release(b.ctx); err != nil {
		t.Fatal(err)
	}

	// The unsharded run records itself the holder of every shard's lock recorded (shard 0/4 ran
	// above), and a shard run the holder of the unsharded one's: whichever lost its locks
	// writes nothing once the other started.
	holder := func(lock string) (cmd string) {
		t.Helper()
		if err := b.pool.QueryRow(b.ctx, `SELECT r.command FROM run_locks l JOIN runs r ON r.id = l.run_id WHERE l.name = $1`, lock).Scan(&cmd); err != nil {
			t.Fatalf("holder of %q: %v", lock, err)
		}
		return cmd
	}
	if got := holder("social sync"); got != "social sync profiles shard 0/4" {
		t.Errorf("the unsharded lock's recorded holder is %q, want the shard's run", got)
	}
	if code, out := run("social", "sync", "comments"); code != 0 {
		t.Fatalf("unsharded sync once no shard runs = exit %d\n%s", code, out)
	}
	if got := holder("social sync shard 0/4"); got != "social sync comments" {
		t.Errorf("shard 0/4's lock's recorded holder is %q, want the unsharded run", got)
	}
}
