package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
	"github.com/ingest-dev/ingest/internal/status"
)

// TestBitrixMigrate runs the whole migration of a small portal, every entity, at the cloud's
// real rate (2/50): the lock both ways, a kill -9 in the middle, reruns that stop at the
// entity whose verify lists records nobody accepted until a person accepts them, a rerun that
// sends nothing, and partial runs.
func TestBitrixMigrate(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	portal := bitrixfake.New(bitrixfake.Options{Seed: 7, Token: "s3cretwebhooktoken", Rate: 2, Burst: 50,
		Users: 40, Groups: 4, Chats: 4, OpenLines: 1, MessagesPerChat: 12, Tasks: 12, Posts: 6,
		Companies: 6, Contacts: 8, Deals: 8, SmartItems: 3, Workflows: 2})
	// The chats' calls can be held back, so that the killed migrate is still inside chats (its
	// third entity, whose verify ends the first run) when the test checks its lock: on a busy
	// machine it could otherwise finish chats first and leave the lock free.
	hold := &chatsHold{release: make(chan struct{})}
	ps := httptest.NewServer(hold.wrap(portal))
	t.Cleanup(ps.Close)
	t.Cleanup(hold.open) // before ps.Close: a held call must end for the server to close
	target := targetfake.New(targetfake.Options{Token: "s3crettargettoken"})
	ts := httptest.NewServer(target)
	t.Cleanup(ts.Close)
	env := []string{"DATABASE_URL=" + b.url, "LOG_FORMAT=json", "USER=ingest-test",
		"BITRIX_WEBHOOK_URL=" + ps.URL + portal.WebhookPath(),
		"TARGET_WEBHOOK_URL=" + strings.Replace(ts.URL, "http://", "http://import:s3crettargettoken@", 1) + "/api/v1/"}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd, stdout, stderr := b.command(args...)
		cmd.Env = append(cmd.Env, env...)
		_ = cmd.Run()
		for _, s := range []string{"s3cretwebhooktoken", "s3crettargettoken"} {
			if strings.Contains(stdout.String()+stderr.String(), s) {
				t.Errorf("ingest %v leaked a token", args)
			}
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	names := bitrix.Catalog().CommandNames()

	// Unknown names are usage errors that list the valid ones, found before anything connects.
	for _, args := range [][]string{{"--only", "users,people"}, {"--from", "people"}} {
		code, _, stderr := run(append([]string{"bitrix", "migrate"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, `unknown entity \"people\"`) || !strings.Contains(stderr, strings.Join(names, ", ")) {
			t.Errorf("bitrix migrate %v = exit %d\n%s", args, code, stderr)
		}
	}

	// An entity command that runs keeps migrate out (its lock set: "bitrix users" and "bitrix"
	// shared, as bitrixPhase takes them).
	cfg, err := pgx.ParseConfig(b.url)
	if err != nil {
		t.Fatal(err)
	}
	held, err := status.AcquireLockWith(b.ctx, cfg, "bitrix users", status.LockOptions{Also: []status.SetLock{{Name: bitrixLock, Shared: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run("bitrix", "migrate"); code != exitLocked || !strings.Contains(stderr, "ingest bitrix users (") {
		t.Errorf("migrate while users runs = exit %d, want %d naming the holder\n%s", code, exitLocked, stderr)
	}
	if err := held.Release(b.ctx); err != nil {
		t.Fatal(err)
	}

	// Migrate keeps the entity commands out while it runs; then it is killed mid-migration.
	child := crashtest.StartArgs(t, binary, []string{"bitrix", "migrate"}, env...)
	// The plan at the start reads the chats' count too: hold from the second entity on, whose
	// get, set and verify come long before the chats' first call.
	child.WaitStderr(t, `"migrate_entity":"2 of `, 3*time.Minute)
	hold.on.Store(true)
	child.WaitStderr(t, `"migrate_entity":"3 of `, 3*time.Minute)
	if code, _, stderr := run("bitrix", "tasks", "get"); code != exitLocked || !strings.Contains(stderr, "ingest bitrix migrate (") {
		t.Errorf("tasks get while migrate runs = exit %d, want %d naming migrate\n%s", code, exitLocked, stderr)
	}
	child.Signal(t, os.Kill)
	if code := child.Wait(t); code != -1 {
		t.Fatalf("migrate ended with %d before the kill\n%s", code, child.Stderr())
	}
	hold.open()
	// A run that starts on a rested portal keeps under its bucket. (A process started while
	// another's calls still fill the portal's bucket cannot know it, and may draw a 503 on its
	// first calls, which it retries.)
	if s := portal.Stats(); s.QueryLimit != 0 {
		t.Errorf("the portal answered QUERY_LIMIT_EXCEEDED %d times at 2/50", s.QueryLimit)
	}

	// Reruns resume; each stops at the entity whose verify lists records nobody accepted, named
	// with the records, until a person accepts them.
	var logs string
	for attempt := 0; ; attempt++ {
		var code int
		code, _, logs = run("bitrix", "migrate")
		if code == 0 {
			break
		}
		m := regexp.MustCompile(`bitrix migrate stopped at (\w+) \(entity \d+ of \d+\), verify: .*?records that keep it from being verified: ([^;]+);`).FindStringSubmatch(logs)
		if code != exitFailed || m == nil || attempt > len(names) {
			t.Fatalf("migrate = exit %d, want 1 naming an entity and its records\n%s", code, logs)
		}
		t.Logf("rerun %d stopped: %s", attempt+1, m[0])
		byEntity := map[string][]string{}
		for _, rec := range strings.Split(strings.TrimSuffix(m[2], ` and`), ", ") {
			entity, id, _ := strings.Cut(strings.TrimSpace(rec), " ")
			byEntity[entity] = append(byEntity[entity], id)
		}
		for entity, ids := range byEntity {
			args := append([]string{"status", "ack", "bitrix", "--entity", entity, "--reason", "accepted in the migration test", "--by", "alice", "--id"}, ids...)
			// Children waiting for a parent that failed (NEW) cannot be accepted themselves: accepting
			// the parent excuses them, and ack refuses them, as a person would see.
			if code, out, stderr := run(args...); code != 0 && (code != exitFailed || !strings.Contains(out, "is NEW: only records in IMPORT_ERR")) {
				t.Fatalf("ack %s %v = exit %d\n%s\n%s", entity, ids, code, out, stderr)
			}
		}
	}
	for _, want := range []string{`"migrate_entity":"1 of `, `"plan_eta_s"`, `"msg":"migration verified"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("migrate's log lacks %s\n%s", want, logs)
		}
	}
	// Nothing lost or doubled by the kill: every record imported once, and verify (every entity,
	// every record against the target) clean.
	st := target.Stats()
	var imported int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM bitrix_records WHERE status = 'IMPORT_OK'`).Scan(&imported); err != nil {
		t.Fatal(err)
	}
	if st.Duplicates != 0 || st.Created != imported {
		t.Errorf("target created %d records (%d duplicates) for %d imported", st.Created, st.Duplicates, imported)
	}
	_, out, _ := run("bitrix", "status", "--json")
	var rep struct {
		Entities []struct {
			Entity       string
			ByStatus     map[string]int64 `json:"by_status"`
			Inventory    *struct{ Verified bool }
			Verified     bool
			VerifiedWith string `json:"verified_with"`
			Waiting      *struct{ Records, Excused int64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, es := range rep.Entities {
		if slices.Contains(names, es.Entity) && !es.Inventory.Verified {
			t.Errorf("%s is not VERIFIED after migrate exited 0", es.Entity)
		}
		// Every line says verified, a child's by its parent's verify, which covers it.
		if !es.Verified || (!slices.Contains(names, es.Entity) && es.VerifiedWith == "") {
			t.Errorf("%s: verified %v (with %q) after migrate exited 0, want its own or its parent's verify", es.Entity, es.Verified, es.VerifiedWith)
		}
		// What is left NEW was not imported for a reason the screen gives: it waits for a parent
		// a person accepted as a known exception.
		if n := es.ByStatus["NEW"]; n > 0 && (es.Waiting == nil || es.Waiting.Excused != n) {
			t.Errorf("%s: %d records NEW after migrate exited 0, waiting: %+v; want every one waiting for an accepted parent", es.Entity, n, es.Waiting)
		}
	}

	// A rerun sends nothing to the target, and publishes the records of every entity.
	textfile := filepath.Join(t.TempDir(), "ingest.prom")
	env = append(env, "METRICS_TEXTFILE="+textfile)
	if code, _, stderr := run("bitrix", "migrate"); code != 0 {
		t.Fatalf("rerun = exit %d\n%s", code, stderr)
	}
	if again := target.Stats(); again.Items != st.Items || again.Created != st.Created {
		t.Errorf("the rerun sent %d items to the target", again.Items-st.Items)
	}
	prom, err := os.ReadFile(textfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{names[0], names[len(names)-1]} {
		if !strings.Contains(string(prom), `scope="`+name+`"`) {
			t.Errorf("migrate's metrics lack the records of %s", name)
		}
	}

	// Partial runs: --only and --from, in migration order; reruns of migrated entities, which ask
	// the portal no plan.
	_, _, stderr := run("bitrix", "migrate", "--only", names[2]+","+names[0])
	if !strings.Contains(stderr, `"entities":2,"rate"`) || !strings.Contains(stderr, `"migrate_entity":"2 of 2","entity":"`+names[2]+`"`) ||
		!strings.Contains(stderr, `"msg":"migration: a rerun, every entity's last get pass complete: no plan asked of the portal`) {
		t.Errorf("--only %s,%s did not migrate those two in order, as a rerun\n%s", names[2], names[0], stderr)
	}
	_, _, stderr = run("bitrix", "migrate", "--from", names[len(names)-2])
	if !strings.Contains(stderr, `"entities":2,"rate"`) || strings.Contains(stderr, `"entity":"`+names[0]+`"`) {
		t.Errorf("--from %s did not start there\n%s", names[len(names)-2], stderr)
	}
}

// chatsHold holds the portal's chat calls (im.* methods, alone or inside a batch) while on,
// until open.
type chatsHold struct {
	on      atomic.Bool
	once    sync.Once
	release chan struct{}
}

func (h *chatsHold) open() { h.once.Do(func() { h.on.Store(false); close(h.release) }) }

func (h *chatsHold) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.on.Load() {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(r.URL.Path, "/im.") || bytes.Contains(body, []byte("im.")) {
				select {
				case <-h.release:
				case <-r.Context().Done():
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
