package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/fakes/enrichfake"
	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/status"
)

func TestSocialCommands(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	fake := graphfake.New(graphfake.Options{Seed: 71, Accounts: []graphfake.AccountSpec{
		{Username: "cafe", Connected: true, Posts: 20, Comments: 40, Stories: 1},
		{Username: "shop", Posts: 15},
		{Username: "gone", Connected: true, TokenExpired: true},
	}})
	gsrv := httptest.NewServer(fake)
	defer gsrv.Close()
	esrv := httptest.NewServer(enrichfake.New(enrichfake.Options{Token: "etok-secret-1"}))
	defer esrv.Close()
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	env := []string{"SOCIAL_GRAPH_URL=" + gsrv.URL + "/v23.0", "SOCIAL_TOKEN_KEY=" + key, "SOCIAL_BATCH_PAUSE=0s",
		"SOCIAL_ENRICH_TEXT_URL=" + esrv.URL + "/v1/text", "SOCIAL_ENRICH_TEXT_TOKEN=etok-secret-1"}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd, stdout, stderr := b.command(args...)
		cmd.Env = append(cmd.Env, env...)
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	if code, _, _ := run("migrate"); code != 0 {
		t.Fatal("migrate failed")
	}
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("username,ig_user_id,token\n")
	var secrets []string
	for _, a := range fake.Accounts() {
		if a.Connected {
			fmt.Fprintf(&csv, "%s,%s,%s\n", a.Username, a.ID, a.Token)
			secrets = append(secrets, a.Token)
		}
	}
	csv.WriteString("shop,,\nbad name!,,\n")
	file := filepath.Join(dir, "accounts.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run("social", "accounts", "import", file)
	if code != 1 || !strings.Contains(out, "line 6") || !strings.Contains(out, "4 added") {
		t.Errorf("import: exit %d\n%s", code, out)
	}

	// A token file, never the command line; the same token twice changes nothing.
	tokFile := filepath.Join(dir, "tok")
	cafe := fake.Accounts()[2]
	if err := os.WriteFile(tokFile, []byte(cafe.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("social", "accounts", "add", "--ig-user-id", cafe.ID, "--token-file", tokFile); code != 0 || !strings.Contains(out, "unchanged") {
		t.Errorf("add again: %d %s", code, out)
	}
	if code, _, errOut := run("social", "accounts", "add", "--ig-user-id", cafe.ID); code != 2 || !strings.Contains(errOut, "token-file") {
		t.Errorf("add without a token: exit %d, want 2: %s", code, errOut)
	}

	// The shard's lock is held: exit 75, nothing done.
	cfg, err := pgx.ParseConfig(b.url)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := status.AcquireLock(b.ctx, cfg, "social sync")
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("social", "sync", "run"); code != 75 || !strings.Contains(errOut, "already running") {
		t.Errorf("sync while locked: exit %d, want 75: %s", code, errOut)
	}
	_ = lock.Release(b.ctx)

	code, _, logs := run("social", "sync", "run")
	if code != 0 {
		t.Fatalf("sync run: exit %d\n%s", code, logs)
	}
	if code, _, logs := run("social", "enrich", "submit"); code != 0 {
		t.Fatalf("enrich submit: exit %d\n%s", code, logs)
	}
	code, out, _ = run("social", "status", "--json")
	var rep struct {
		Accounts []struct {
			Username, Status string
			Capabilities     []struct{ What, Detail string }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Accounts) != 4 {
		t.Fatalf("status: exit %d, %v\n%s", code, err, out)
	}
	statuses := map[string]string{}
	for _, a := range rep.Accounts {
		statuses[a.Username] = a.Status
	}
	if statuses["cafe"] != "synced" || statuses["shop"] != "synced" || statuses["gone"] != "needs_attention" {
		t.Errorf("statuses %v", statuses)
	}
	code, text, _ := run("social", "status")
	if code != 0 || !strings.Contains(text, "not available: the Graph API has no highlights") {
		t.Errorf("status text:\n%s", text)
	}
	post := fake.Accounts()[2].Posts[0]
	code, shown, _ := run("show", "social", post)
	if code != 0 || !strings.Contains(shown, "as received: ") || !strings.Contains(shown, "comments (") {
		t.Errorf("show post: exit %d\n%s", code, shown)
	}
	code, acct, _ := run("show", "social", "cafe")
	if code != 0 || !strings.Contains(acct, "token fingerprint") {
		t.Errorf("show account: exit %d\n%s", code, acct)
	}
	if code, _, errOut := run("show", "social", "nobody"); code != 1 || !strings.Contains(errOut, "no social account or post") {
		t.Errorf("show unknown: exit %d %s", code, errOut)
	}
	for _, s := range append(secrets, "etok-secret-1", key) {
		for _, o := range []string{logs, out, text, shown, acct} {
			if strings.Contains(o, s) {
				t.Errorf("a secret shows in the output: %.40s…", s)
			}
		}
	}
	// A provider's token refused (401) or empty: a configuration error (78), after nothing was
	// changed for it; an empty one before any work. The submitted job is due a poll.
	conn, err := pgx.ConnectConfig(b.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(b.ctx)
	if tag, err := conn.Exec(b.ctx, `UPDATE social_enrich_jobs SET next_attempt_at = now() - interval '1 minute' WHERE status = 'job_running'`); err != nil || tag.RowsAffected() == 0 {
		t.Fatalf("no running job to poll: %v", err)
	}
	for tok, want := range map[string]string{"wrong-token": "refuses the token", "": "SOCIAL_ENRICH_TEXT_TOKEN is empty"} {
		cmd, _, stderr := b.command("social", "enrich", "poll")
		cmd.Env = append(append(cmd.Env, env...), "SOCIAL_ENRICH_TEXT_TOKEN="+tok)
		_ = cmd.Run()
		if cmd.ProcessState.ExitCode() != 78 || !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "etok-secret-1") {
			t.Errorf("enrich poll, token %q: exit %d, want 78 saying %q: %s", tok, cmd.ProcessState.ExitCode(), want, stderr.String())
		}
	}
	// Without SOCIAL_TOKEN_KEY a sync refuses to start (configuration, 78).
	cmd, _, stderr := b.command("social", "sync", "posts")
	cmd.Env = append(cmd.Env, "SOCIAL_GRAPH_URL="+gsrv.URL)
	_ = cmd.Run()
	if cmd.ProcessState.ExitCode() != 78 || !strings.Contains(stderr.String(), "SOCIAL_TOKEN_KEY") {
		t.Errorf("sync without a key: exit %d %s", cmd.ProcessState.ExitCode(), stderr.String())
	}
}
