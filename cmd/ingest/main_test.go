package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/habrfake"
)

// binary is the ingest binary built once for the tests that run it as a real process. It is
// built without the race detector, as internal/crashtest builds its children: the processes are
// killed, locked out and rerun for what they leave in the database and print, and the raced
// binary made them cost 73 CPU seconds of make test instead of 42 (the package alone, 2 CPUs).
// The code they run is raced where it lives: cmd/ingest's in this test process (Main, which the
// in-process tests call; main adds a signal handler that cancels a context), the engine's, the
// pipelines' and the locks' in their packages' tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ingest-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "ingest")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build ingest: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type cliBundle struct {
	ctx  context.Context
	url  string
	pool *pgxpool.Pool
	fake *habrfake.Server
	base string
}

func setupCLI(t *testing.T) *cliBundle {
	t.Helper()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	fake, base := habrfake.Start(t, habrfake.Options{})
	return &cliBundle{ctx: context.Background(), url: url, pool: pool, fake: fake, base: base}
}

// gatePages puts a gate in front of the fake: every request for a publication's page waits
// until open is called (or its client leaves); feeds pass. A test holds a run in the middle of
// its work for as long as it needs, whatever the machine's load.
func (b *cliBundle) gatePages(t *testing.T) (open func()) {
	t.Helper()
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/rss/") {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		b.fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b.base = srv.URL
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return open
}

// command prepares `ingest args...` against the test database and the fake Habr.
func (b *cliBundle) command(args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(binary, args...)
	// USER is set so that manual changes are signed wherever the tests run (CI may have none).
	cmd.Env = append(os.Environ(), "DATABASE_URL="+b.url, "HABR_BASE_URL="+b.base, "LOG_FORMAT=json", "USER=ingest-test")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// run runs `ingest args...` to the end and returns its exit code and output.
func (b *cliBundle) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd, stdout, stderr := b.command(args...)
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("ingest %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// registerFew discovers from the fake and keeps only the n lowest ids, so an extraction is one
// or two batches long.
func (b *cliBundle) registerFew(t *testing.T, n int) []int64 {
	t.Helper()
	if code, _, stderr := b.run(t, "discover", "habr"); code != 0 {
		t.Fatalf("discover: exit %d\n%s", code, stderr)
	}
	if _, err := b.pool.Exec(b.ctx, `DELETE FROM habr_publications WHERE id NOT IN
(SELECT id FROM habr_publications ORDER BY id LIMIT $1)`, n); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	rows, _ := b.pool.Query(b.ctx, "SELECT id FROM habr_publications ORDER BY id")
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	if rows.Err() != nil || len(ids) != n {
		t.Fatalf("registered %v (%v), want %d", ids, rows.Err(), n)
	}
	return ids
}

// slowPages makes every registered page answer after d.
func (b *cliBundle) slowPages(t *testing.T, d time.Duration) {
	t.Helper()
	rows, _ := b.pool.Query(b.ctx, "SELECT url FROM habr_publications")
	for rows.Next() {
		var u string
		_ = rows.Scan(&u)
		path := strings.TrimPrefix(u, "https://habr.com")
		if err := b.fake.SetFault(path, habrfake.Fault{Kind: habrfake.FaultSlow, Delay: d}); err != nil {
			t.Fatal(err)
		}
	}
}

func (b *cliBundle) scalar(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := b.pool.QueryRow(b.ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestUsageAndConfigErrors(t *testing.T) {
	t.Parallel()
	b := &cliBundle{url: "postgres://ingest:s3cretpw@127.0.0.1:1/none"}
	tests := []struct {
		args []string
		env  string
		code int
		want string
	}{
		{nil, "", exitUsage, "a command is required"},
		{[]string{"extract"}, "", exitUsage, "extract needs a subcommand"},
		{[]string{"status", "--bogus"}, "", exitUsage, "unknown argument --bogus"},
		{[]string{"status", "set", "habr", "--to", "extracted"}, "", exitUsage, "--id is required"},
		{[]string{"status", "set", "--id", "1"}, "", exitUsage, "SOURCE is required"},
		{[]string{"status"}, "DATABASE_URL=", exitConfig, "DATABASE_URL (or --database-url) is required"},
		{[]string{"status"}, "DATABASE_URL=mysql://x", exitConfig, "the scheme mysql://, not Postgres's"},
		{[]string{"status"}, "DATABASE_URL=postgres://u@h:notaport/db", exitConfig, "not a valid Postgres URL"},
		{[]string{"status"}, "LOG_LEVEL=loud", exitConfig, "LOG_LEVEL"},
		{[]string{"status"}, "", exitFailed, "cannot connect to Postgres"},
	}
	for _, tt := range tests {
		cmd, _, stderr := b.command(tt.args...)
		if tt.env != "" {
			cmd.Env = append(cmd.Env, tt.env)
		}
		_ = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("ingest %v (%s) = exit %d, stderr:\n%s\nwant exit %d mentioning %q", tt.args, tt.env, code, stderr, tt.code, tt.want)
		}
		if strings.Contains(stderr.String(), "s3cretpw") {
			t.Errorf("ingest %v: the database password leaked:\n%s", tt.args, stderr)
		}
	}
	code, stdout, _ := b.run(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "ingest ") {
		t.Errorf("version = %d %q", code, stdout)
	}
}

func TestSecondRunIsRefusedByTheLock(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	b.registerFew(t, 4)
	// The first run's pages wait at a gate: it holds the lock, working, until the gate opens
	// (within its fetch timeout, 30 s: the checks below take a few seconds on a busy machine).
	open := b.gatePages(t)

	first, _, firstErr := b.command("extract", "habr")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	// Wait until the first run holds the lock and works.
	deadline := time.Now().Add(2 * time.Minute) // a bound for a hung test, not a timing claim
	for b.scalar(t, `SELECT count(*) FROM habr_publications WHERE attempt_started_at IS NOT NULL`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("first run never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, _, stderr := b.run(t, "extract", "habr")
	if code != exitLocked || !strings.Contains(stderr, "already running") {
		t.Errorf("second run = exit %d\n%s\nwant %d and a clear message", code, stderr, exitLocked)
	}
	// It gave up at once, not once the lock was free: the first run still waits at the gate.
	select {
	case err := <-exited:
		t.Fatalf("the first run ended (%v) before the second gave up; the second waited for the lock", err)
	default:
	}
	// A different command is not blocked.
	if code, _, stderr := b.run(t, "discover", "habr"); code != 0 {
		t.Errorf("discover during extract = exit %d\n%s", code, stderr)
	}
	open()
	if err := <-exited; err != nil {
		t.Fatalf("first run: %v\n%s", err, firstErr)
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_publications WHERE status = 'extracted'"); n != 4 {
		t.Errorf("first run extracted %d, want 4", n)
	}
	if n := b.scalar(t, "SELECT count(*) FROM runs WHERE command = 'extract habr'"); n != 1 {
		t.Errorf("%d extract runs recorded, want 1 (the refused one records nothing)", n)
	}
}

func TestSIGTERMMidBatchThenRerun(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	ids := b.registerFew(t, 6)
	b.slowPages(t, 400*time.Millisecond)

	cmd, _, stderr := b.command("extract", "habr")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute) // a bound for a hung test, not a timing claim
	for b.scalar(t, "SELECT count(*) FROM habr_publications WHERE status = 'extracted'") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no progress\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitSIGTERM {
		t.Fatalf("exit %d after SIGTERM, want %d\n%s", code, exitSIGTERM, stderr)
	}
	if n := b.scalar(t, "SELECT count(*) FROM runs WHERE outcome = 'interrupted'"); n != 1 {
		t.Errorf("%d interrupted runs recorded, want 1", n)
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_publications WHERE status <> 'extracted' AND status <> 'extract_pending'"); n != 0 {
		t.Errorf("%d publications failed or broken by the stop", n)
	}

	// The lock was released: a rerun starts at once and finishes the rest.
	code, _, rerunErr := b.run(t, "extract", "habr")
	if code != 0 {
		t.Fatalf("rerun = exit %d\n%s", code, rerunErr)
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_publications WHERE status = 'extracted'"); n != int64(len(ids)) {
		t.Errorf("%d extracted after rerun, want %d", n, len(ids))
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_markdown"); n != int64(len(ids)) {
		t.Errorf("%d markdown rows, want %d", n, len(ids))
	}
}

func TestKillMidBatchThenRerun(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	ids := b.registerFew(t, 6)
	b.slowPages(t, 300*time.Millisecond)

	for kills := 0; kills < 3; kills++ {
		cmd, _, _ := b.command("extract", "habr")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it while it works on a page: once its run is recorded and one of its attempts has
		// started (a fixed delay killed a slow-starting binary before it recorded anything).
		deadline := time.Now().Add(2 * time.Minute) // a bound for a hung test, not a timing claim
		for b.scalar(t, `SELECT count(*) FROM habr_publications WHERE attempt_started_at IS NOT NULL
AND attempt_run_id = (SELECT max(id) FROM runs WHERE command = 'extract habr' AND outcome = 'running')`) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("run %d never started an attempt", kills+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Duration(kills*150) * time.Millisecond)
		_ = cmd.Process.Kill() // SIGKILL: no cleanup at all
		_ = cmd.Wait()
	}
	code, _, stderr := b.run(t, "extract", "habr")
	if code != 0 {
		t.Fatalf("rerun after kills = exit %d\n%s", code, stderr)
	}
	// A page in flight when its process was killed counts as a failed attempt, retried on the
	// schedule (issue 14: a page that kills every run must not block the others forever). Once
	// those retries are due, a run extracts them.
	if n := b.scalar(t, `SELECT count(*) FROM habr_publications WHERE status <> 'extracted'
AND NOT (status = 'extract_failed' AND last_error LIKE '%never finished%')`); n != 0 {
		t.Errorf("%d publications neither extracted nor waiting to retry an attempt that died", n)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE habr_publications SET next_attempt_at = now() WHERE status = 'extract_failed'`); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := b.run(t, "extract", "habr"); code != 0 {
		t.Fatalf("run once the retries are due = exit %d\n%s", code, stderr)
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_publications WHERE status = 'extracted'"); n != int64(len(ids)) {
		t.Errorf("%d extracted, want %d", n, len(ids))
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_markdown"); n != int64(len(ids)) {
		t.Errorf("%d markdown rows, want %d (no duplicates, none lost)", n, len(ids))
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_publications"); n != int64(len(ids)) {
		t.Errorf("%d publications, want %d", n, len(ids))
	}
	// Every killed run is found and marked abandoned by the next one.
	if n := b.scalar(t, "SELECT count(*) FROM runs WHERE outcome = 'running'"); n != 0 {
		t.Errorf("%d runs still marked running", n)
	}
	if n := b.scalar(t, "SELECT count(*) FROM runs WHERE outcome = 'abandoned'"); n == 0 {
		t.Error("no run marked abandoned")
	}
}

func TestStatusSetByHand(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	ids := b.registerFew(t, 2)
	broken := fmt.Sprint(ids[0])
	if _, err := b.pool.Exec(b.ctx, "UPDATE habr_publications SET status = 'extract_broken', last_error = 'stub page' WHERE id = $1", ids[0]); err != nil {
		t.Fatal(err)
	}

	code, stdout, _ := b.run(t, "status", "set", "habr", "--id", broken, fmt.Sprint(ids[1]), "--to", "extracted", "--reason", "x")
	if code != exitFailed || !strings.Contains(stdout, "refused") || !strings.Contains(stdout, "you may move to: extract_pending") {
		t.Errorf("refused set = exit %d\n%s", code, stdout)
	}
	code, _, stderr := b.run(t, "status", "set", "habr", "--id", broken, "--to", "nonsense", "--reason", "x")
	if code != exitUsage || !strings.Contains(stderr, "valid: extract_pending, extracted, extract_failed, extract_broken") {
		t.Errorf("unknown status = exit %d\n%s", code, stderr)
	}
	code, stdout, stderr = b.run(t, "status", "set", "habr", "--id", broken, "--to", "extract_pending", "--reason", "selector fixed", "--by", "alice")
	if code != 0 || !strings.Contains(stdout, "extract_broken -> extract_pending") {
		t.Fatalf("set = exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = b.run(t, "show", "habr", broken)
	if code != 0 || !strings.Contains(stdout, "manual: alice") || !strings.Contains(stdout, "selector fixed") {
		t.Errorf("show after set = exit %d\n%s", code, stdout)
	}
	code, stdout, _ = b.run(t, "status", "habr", "--json")
	if code != 0 || !strings.Contains(stdout, `"status": "extract_pending"`) {
		t.Errorf("status --json = exit %d\n%s", code, stdout)
	}
}

// show habr prints the page's metadata once a publication is extracted, in text and JSON.
func TestShowHabrMetadata(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	if code, _, stderr := b.run(t, "discover", "habr"); code != 0 {
		t.Fatalf("discover: exit %d\n%s", code, stderr)
	}
	if _, err := b.pool.Exec(b.ctx, `DELETE FROM habr_publications WHERE id <> 462783`); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := b.run(t, "extract", "habr"); code != 0 {
		t.Fatalf("extract: exit %d\n%s", code, stderr)
	}
	code, stdout, _ := b.run(t, "show", "habr", "462783")
	for _, want := range []string{"SmirkinDA (Дмитрий Смиркин)", "Блог компании Parallels (parallels)",
		"Читальный зал, Киберпанк", "parallels, martix, history, movie", "Матрица"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("show habr = exit %d, no %q in\n%s", code, want, stdout)
		}
	}
	code, stdout, _ = b.run(t, "show", "habr", "462783", "--json")
	for _, want := range []string{`"AuthorName": "Дмитрий Смиркин"`, `"Alias": "parallels"`, `"Tags": [`, `"FeedCategories": [`} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("show habr --json = exit %d, no %q in\n%s", code, want, stdout)
		}
	}
}

// discover habr reads the configured feeds instead of the defaults; a feed off Habr is a
// configuration error, found before any run starts.
func TestDiscoverHabrFeeds(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	cmd, _, stderr := b.command("discover", "habr")
	cmd.Env = append(cmd.Env, "HABR_FEEDS=/ru/rss/articles/?fl=ru,https://example.com/rss/")
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitConfig || !strings.Contains(stderr.String(), `feed \"https://example.com/rss/\"`) {
		t.Errorf("off-Habr feed = exit %d\n%s", code, stderr)
	}
	if n := b.scalar(t, "SELECT count(*) FROM runs"); n != 0 {
		t.Errorf("%d runs recorded for a configuration error", n)
	}
	if code, _, stderr := b.run(t, "discover", "habr", "--feed", "https://habr.com/ru/rss/all/all/", "--feed", "/ru/rss/users/medsurg/publications/articles/"); code != 0 {
		t.Fatalf("discover --feed = exit %d\n%s", code, stderr)
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_publications WHERE feed NOT IN ('/ru/rss/all/all/', '/ru/rss/users/medsurg/publications/articles/')"); n != 0 {
		t.Errorf("%d publications from other feeds", n)
	}
	if n := b.scalar(t, "SELECT count(*) FROM habr_publications"); n != 22 {
		t.Errorf("%d publications, want the 20 + 2 items of the two feeds", n)
	}
}
