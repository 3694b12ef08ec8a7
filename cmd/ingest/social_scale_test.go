package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
)

// TestSocialGeneratedShards is issue 34's acceptance: generated accounts imported from their
// CSV, then synced by 4 shards at once, each its own process: every shard exits 0, every
// account ends synced or stated with its reason (the faults the generator gave it), none is
// left pending, no account is worked by two shards, and the Graph API calls are within 5% of
// the fewest that read every account. `make test` runs 200 accounts; the 2,000 (and
// the figures in docs/benchmarks.md) by hand:
//
//	SOCIAL_SCALE_ACCOUNTS=2000 SOCIAL_SCALE_LATENCY=200ms SOCIAL_SCALE_INGEST=$PWD/bin/ingest \
//	  scripts/with-pg.sh go test -count=1 -v -timeout 60m -run TestSocialGeneratedShards ./cmd/ingest/
//
// SOCIAL_SCALE_INGEST runs a binary built without -race (the test's own has the race
// detector's memory and speed): the peak RSS per shard is only meaningful with it.
func TestSocialGeneratedShards(t *testing.T) {
	t.Parallel()
	n, shards := 200, 4
	if v := os.Getenv("SOCIAL_SCALE_ACCOUNTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			t.Fatalf("SOCIAL_SCALE_ACCOUNTS=%q: want a number of accounts, 10 or more", v)
		}
	}
	latency := time.Duration(0)
	if v := os.Getenv("SOCIAL_SCALE_LATENCY"); v != "" {
		var err error
		if latency, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	b := setupCLI(t)
	fake := graphfake.New(graphfake.Options{Seed: 34, GeneratedAccounts: n, NoFixtureAccounts: true, Latency: latency})
	gsrv := httptest.NewServer(fake)
	defer gsrv.Close()
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32)))
	env := []string{"SOCIAL_GRAPH_URL=" + gsrv.URL + "/v23.0", "SOCIAL_TOKEN_KEY=" + key, "SOCIAL_BATCH_PAUSE=0s", "LOG_LEVEL=warn"}
	command := func(args ...string) (*exec.Cmd, *strings.Builder) {
		cmd, _, _ := b.command(args...)
		if bin := os.Getenv("SOCIAL_SCALE_INGEST"); bin != "" {
			cmd.Path, cmd.Args[0] = bin, bin
		}
		cmd.Env = append(cmd.Env, env...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd, &out
	}
	run := func(args ...string) {
		t.Helper()
		cmd, out := command(args...)
		if err := cmd.Run(); err != nil {
			t.Fatalf("ingest %v: %v\n%s", args, err, out)
		}
	}
	run("migrate")

	// The accounts file as bin/fakes --social-accounts-file writes it: connected first.
	file := filepath.Join(t.TempDir(), "accounts.csv")
	writeGenerated(t, file, fake)
	start := time.Now()
	run("social", "accounts", "import", file)
	t.Logf("import of %d accounts: %s", n, time.Since(start).Round(time.Millisecond))

	// Every shard at once, each a process of its own.
	start = time.Now()
	var wg sync.WaitGroup
	outs := make([]*strings.Builder, shards)
	cmds := make([]*exec.Cmd, shards)
	walls := make([]time.Duration, shards)
	for i := range shards {
		cmds[i], outs[i] = command("social", "sync", "run", "--shards", strconv.Itoa(shards), "--shard", strconv.Itoa(i))
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = cmds[i].Wait()
			walls[i] = time.Since(start)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for i, cmd := range cmds {
		code := cmd.ProcessState.ExitCode()
		var rss int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss // KiB on Linux
		}
		t.Logf("shard %d/%d: exit %d in %s, peak RSS %.1f MiB", i, shards, code, walls[i].Round(time.Millisecond), float64(rss)/1024)
		if code != 0 {
			t.Errorf("shard %d: exit %d\n%s", i, code, tail(outs[i].String(), 4000))
		}
	}

	// Every account synced, or stated with its reason: the one its fault gives it.
	type row struct {
		username, status, lastError string
		runs, shardsSeen            int
	}
	rows := map[string]row{}
	q, err := b.pool.Query(b.ctx, `SELECT a.username, a.status, coalesce(a.last_error, ''),
  (SELECT count(DISTINCT h.run_id) FROM status_history h WHERE h.machine = 'social_accounts' AND h.record_id = a.id AND h.run_id IS NOT NULL),
  (SELECT count(DISTINCT r.run_id) FROM social_raw_pages r WHERE r.account_id = a.id)
FROM social_accounts a`)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var r row
		if err := q.Scan(&r.username, &r.status, &r.lastError, &r.runs, &r.shardsSeen); err != nil {
			t.Fatal(err)
		}
		rows[r.username] = r
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d accounts tracked, want %d", len(rows), n)
	}
	minimum, byStatus := 0, map[string]int{}
	for i := range n {
		a, _ := fake.Describe(graphfake.GeneratedUsername(i))
		minimum += a.MinimumCalls
		r := rows[a.Username]
		byStatus[r.status]++
		want := "synced"
		switch {
		case a.Spec.TokenExpired:
			want = "needs_attention"
		case a.Spec.AgeGated:
			want = "sync_failed"
		}
		if r.status != want || (want != "synced" && r.lastError == "") {
			t.Errorf("%s (%+v): %s %q, want %s with its reason", a.Username, a.Spec, r.status, r.lastError, want)
		}
		if r.runs > 1 || r.shardsSeen > 1 {
			t.Errorf("%s was worked by %d runs (its raw pages by %d)", a.Username, r.runs, r.shardsSeen)
		}
	}
	var pendingPosts int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM social_posts WHERE status IN ('comments_pending', 'comments_retry', 'fetched')`).Scan(&pendingPosts); err != nil {
		t.Fatal(err)
	}
	if pendingPosts != 0 {
		t.Errorf("%d posts left pending (their comments or normalization)", pendingPosts)
	}
	// One run worked each shard's accounts: no run touched an account of another shard.
	var crossed int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM (SELECT h.run_id FROM status_history h
WHERE h.machine = 'social_accounts' AND h.run_id IS NOT NULL GROUP BY h.run_id HAVING count(DISTINCT h.record_id % $1) > 1) x`, shards).Scan(&crossed); err != nil {
		t.Fatal(err)
	}
	if crossed != 0 {
		t.Errorf("%d runs worked accounts of more than one shard", crossed)
	}
	calls := fake.Stats().Requests
	var posts, comments int
	if err := b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM social_posts), (SELECT count(*) FROM social_comments)`).Scan(&posts, &comments); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d accounts on %d shards at once (answers in %s): %s; statuses %v; %d posts, %d comments; %d Graph API calls, minimum %d (%+.2f%%); %.1f accounts/s per shard",
		n, shards, latency, wall.Round(time.Millisecond), byStatus, posts, comments, calls, minimum, 100*float64(calls-minimum)/float64(minimum),
		float64(n)/wall.Seconds()/float64(shards))
	if calls < minimum || float64(calls) > 1.05*float64(minimum) {
		t.Errorf("%d calls for a minimum of %d: not within 5%%", calls, minimum)
	}
}

// writeGenerated writes the fake's generated accounts as bin/fakes --social-accounts-file does.
func writeGenerated(t *testing.T, path string, fake *graphfake.Server) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "username,ig_user_id,token")
	for _, connected := range []bool{true, false} {
		for i := range fake.GeneratedAccounts() {
			a := fake.Generated(i)
			switch {
			case connected && a.Connected:
				fmt.Fprintf(w, "%s,%s,%s\n", a.Username, a.ID, a.Token)
			case !connected && !a.Connected:
				fmt.Fprintf(w, "%s,,\n", a.Username)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
