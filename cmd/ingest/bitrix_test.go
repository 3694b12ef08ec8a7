package main

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
)

// bitrixEnv starts a fake portal and a fake target and returns the env that points ingest at
// them, with the secrets the output must never show.
func bitrixEnv(t *testing.T, users, groups int) (env []string, secrets []string, portal *bitrixfake.Portal, target *targetfake.Server) {
	t.Helper()
	portal = bitrixfake.New(bitrixfake.Options{Users: users, Groups: groups, Seed: 7, Token: "s3cretwebhooktoken",
		Chats: 8, MessagesPerChat: 70})
	ps := httptest.NewServer(portal)
	t.Cleanup(ps.Close)
	target = targetfake.New(targetfake.Options{Token: "s3crettargettoken"})
	ts := httptest.NewServer(target)
	t.Cleanup(ts.Close)
	env = []string{
		"BITRIX_WEBHOOK_URL=" + ps.URL + portal.WebhookPath(),
		"TARGET_WEBHOOK_URL=" + strings.Replace(ts.URL, "http://", "http://import:s3crettargettoken@", 1) + "/api/v1/",
	}
	return env, []string{"s3cretwebhooktoken", "s3crettargettoken"}, portal, target
}

func TestBitrixCommands(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	env, secrets, portal, target := bitrixEnv(t, 300, 12)
	run := func(args ...string) (int, string, string) {
		cmd, stdout, stderr := b.command(args...)
		cmd.Env = append(cmd.Env, env...)
		_ = cmd.Run()
		out, errOut := stdout.String(), stderr.String()
		for _, s := range secrets {
			if strings.Contains(out+errOut, s) {
				t.Errorf("ingest %v leaked a token:\n%s\n%s", args, out, errOut)
			}
		}
		return cmd.ProcessState.ExitCode(), out, errOut
	}

	// Groups refuse to import before users are imported and verified.
	if code, _, stderr := run("bitrix", "groups", "get"); code != 0 {
		t.Fatalf("groups get = exit %d\n%s", code, stderr)
	}
	code, _, stderr := run("bitrix", "groups", "set")
	if code != exitFailed || !strings.Contains(stderr, "users must be imported and verified first") {
		t.Errorf("groups set before users = exit %d\n%s", code, stderr)
	}
	if code, _, stderr := run("bitrix", "users", "run"); code != 0 {
		t.Fatalf("users run = exit %d\n%s", code, stderr)
	}
	if code, _, stderr := run("bitrix", "groups", "run"); code != 0 {
		t.Fatalf("groups run = exit %d\n%s", code, stderr)
	}
	code, _, stderr = run("bitrix", "--concurrency", "0", "chats", "get")
	if code != exitConfig || !strings.Contains(stderr, "BITRIX_CONCURRENCY must be between 1 and") {
		t.Errorf("chats get with concurrency 0 = exit %d\n%s", code, stderr)
	}
	code, _, stderr = run("bitrix", "--deletions", "drop", "chats", "get")
	if code != exitConfig || !strings.Contains(stderr, "BITRIX_DELETIONS must be keep or propagate") {
		t.Errorf("chats get with --deletions drop = exit %d\n%s", code, stderr)
	}
	// The workgroup chats the webhook's user is not in are listed as out of reach, which does not
	// stop the chats it can read from being verified.
	code, _, stderr = run("bitrix", "chats", "run")
	if code != 0 || !strings.Contains(stderr, "chats out of the webhook user's reach") {
		t.Fatalf("chats run = exit %d\n%s", code, stderr)
	}
	if st := target.Stats(); st.Duplicates != 0 {
		t.Errorf("target duplicates = %d", st.Duplicates)
	}
	code, stdout, _ := run("bitrix", "status")
	// Verified: users, groups, chats, and their children by their parents' verify.
	if code != 0 || !strings.Contains(stdout, "chat_messages") || strings.Count(stdout, "yes, ") != 5 || !strings.Contains(stdout, "(with chats)") {
		t.Errorf("bitrix status = exit %d\n%s", code, stdout)
	}
	if !strings.Contains(stdout, "  users pass 1 (full): user.get documents filters on the fields of user.add only") {
		t.Errorf("bitrix status does not say the kind of the users' pass and why:\n%s", stdout)
	}

	// A person sends a record through set again by its portal id.
	code, stdout, stderr = run("status", "set", "bitrix", "--entity", "users", "--id", "1", "999999", "--to", "NEW", "--reason", "re-import after fix", "--by", "bob")
	if code != exitFailed || !strings.Contains(stdout, "bitrix users 1: IMPORT_OK -> NEW") || !strings.Contains(stdout, "users 999999: refused: no such record") {
		t.Errorf("status set by portal id = exit %d\n%s\n%s", code, stdout, stderr)
	}
	// status ack answers with the ids it was given, not the rows' own.
	code, stdout, stderr = run("status", "ack", "bitrix", "--entity", "users", "--id", "1", "--reason", "test", "--by", "bob")
	if code != exitFailed || !strings.Contains(stdout, "bitrix users 1: refused: ") {
		t.Errorf("status ack by portal id = exit %d\n%s\n%s", code, stdout, stderr)
	}
	// show bitrix tells where the record stands and why, with its history.
	code, stdout, stderr = run("show", "bitrix", "users", "1")
	if code != 0 || !strings.Contains(stdout, "NEW (attempts: ") || !strings.Contains(stdout, "manual: bob") ||
		!strings.Contains(stdout, "re-import after fix") || !strings.Contains(stdout, `"ID": "1"`) {
		t.Errorf("show bitrix users 1 = exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = run("show", "bitrix", "--json", "groups", strconv.Itoa(portal.GroupIDs()[0]))
	var shown struct {
		Status   string            `json:"status"`
		TargetID string            `json:"target_id"`
		History  []json.RawMessage `json:"history"`
	}
	if err := json.Unmarshal([]byte(stdout), &shown); code != 0 || err != nil || shown.Status != "IMPORT_OK" || shown.TargetID == "" || len(shown.History) == 0 {
		t.Errorf("show bitrix --json groups = exit %d, %v\n%s", code, err, stdout)
	}
	if code, _, stderr = run("show", "bitrix", "users", "999999"); code != exitFailed || !strings.Contains(stderr, "no users record with the portal's id 999999") {
		t.Errorf("show bitrix of an unknown id = exit %d\n%s", code, stderr)
	}
	if code, _, stderr = run("show", "bitrix", "people", "1"); code != exitUsage || !strings.Contains(stderr, `unknown entity \"people\"`) {
		t.Errorf("show bitrix of an unknown entity = exit %d\n%s", code, stderr)
	}
	code, _, stderr = run("status", "set", "bitrix", "--entity", "user", "--id", "1", "--to", "NEW", "--reason", "x")
	if code != exitUsage || !strings.Contains(stderr, `unknown bitrix --entity \"user\"`) {
		t.Errorf("status set with a misspelt entity = exit %d\n%s", code, stderr)
	}

	code, _, stderr = run("status", "set", "bitrix", "--id", "users:1", "--to", "NEW", "--reason", "x")
	if code != exitUsage || !strings.Contains(stderr, "add --entity") {
		t.Errorf("status set with a non-numeric id = exit %d\n%s", code, stderr)
	}

	// A missing webhook is a configuration error naming the variable, found before any work.
	cmd, _, errBuf := b.command("bitrix", "users", "get")
	cmd.Env = append(cmd.Env, "BITRIX_WEBHOOK_URL=")
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitConfig || !strings.Contains(errBuf.String(), "BITRIX_WEBHOOK_URL") {
		t.Errorf("users get without webhook = exit %d\n%s", code, errBuf)
	}
	code, _, stderr = run("bitrix", "users", "frobnicate")
	if code != exitUsage {
		t.Errorf("unknown phase = exit %d\n%s", code, stderr)
	}
}
