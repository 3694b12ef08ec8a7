package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/dbtest"
)

func TestWebhookURLShape(t *testing.T) {
	t.Parallel()
	const token = "s3cretwebhooktoken"
	portal := []struct {
		raw, want string // want: "" for accepted, else a part of the error
	}{
		{"https://acme.bitrix24.ru/rest/1/" + token + "/", ""},
		{"https://acme.bitrix24.ru/rest/1/" + token, ""},
		{"https://intranet.acme.example/portal/rest/17/" + token + "/", ""},
		{"http://127.0.0.1:8080/rest/1/" + token + "/", ""},
		{"http://localhost/rest/1/" + token + "/", ""},
		{"http://[::1]:9/rest/1/" + token + "/", ""},
		{"http://acme.bitrix24.ru/rest/1/" + token + "/", "clear text"},
		{"ftp://acme.bitrix24.ru/rest/1/" + token + "/", `scheme "ftp" is not https`},
		{"acme.bitrix24.ru/rest/1/" + token + "/", "is not https"},
		{"https:///rest/1/" + token + "/", "no host"},
		{"https://acme.bitrix24.ru/", "no /rest/USER_ID/TOKEN/ path"},
		{"https://acme.bitrix24.ru/rest/" + token + "/", "numeric id"},
		{"https://acme.bitrix24.ru/rest/admin/" + token + "/", "numeric id"},
		{"https://acme.bitrix24.ru/rest/1//", "token after /rest/1/ is missing"},
		{"https://acme.bitrix24.ru/rest/1/short/", "token after /rest/1/ is missing or malformed"},
		{"https://acme.bitrix24.ru/rest/1/" + token + "/?x=1", "no user info, query"},
		{"https://u:" + token + "@acme.bitrix24.ru/rest/1/" + token + "/", "no user info"},
	}
	for _, tt := range portal {
		_, err := checkPortalWebhook("BITRIX_WEBHOOK_URL", tt.raw)
		checkURLError(t, tt.raw, err, tt.want, token)
	}
	target := []struct{ raw, want string }{
		{"https://import:" + token + "@target.example/api/v1/", ""},
		{"http://import:" + token + "@127.0.0.1:9/api/v1/", ""},
		{"http://import:" + token + "@target.example/api/v1/", "clear text"},
		{"https://target.example/api/v1/", "has no token"},
		{"https://import@target.example/api/v1/", "has no token"},
		{"https://import:" + token + "@target.example/api/v1/?a=b", "no query"},
		{"import:" + token + "@target.example", "is not https"},
	}
	for _, tt := range target {
		_, err := checkTargetURL("TARGET_WEBHOOK_URL", tt.raw)
		checkURLError(t, tt.raw, err, tt.want, token)
	}
}

func checkURLError(t *testing.T, raw string, err error, want, secret string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v, want accepted", raw, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: %v, want an error mentioning %q", raw, err, want)
	case err != nil && strings.Contains(err.Error(), secret):
		t.Errorf("%s: the error shows the token: %v", raw, err)
	case err != nil && !errors.As(err, new(configError)):
		t.Errorf("%s: %T is not a configuration error", raw, err)
	}
}

func TestRefusedConnection(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig("postgres://ingest:pw@db.example:5432/ingest")
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]string{
		"28P01": `refused the password of user "ingest"`,
		"28000": `refused user "ingest"`,
		"3D000": `database "ingest" does not exist`,
		"42501": `refused user "ingest" on database "ingest"`,
		"57P03": "", // the server is starting up: try again next run
	} {
		err := fmt.Errorf("connect: %w", &pgconn.PgError{Code: code, Message: "m"})
		msg, refused := refusedConnection(err, cfg)
		if refused != (want != "") || !strings.Contains(msg, want) {
			t.Errorf("SQLSTATE %s: %q refused=%v, want %q", code, msg, refused, want)
		}
	}
	if _, refused := refusedConnection(errors.New("dial tcp: connection refused"), cfg); refused {
		t.Error("an unreachable server counts as refused")
	}
}

// TestExitCodesAndJSONLines runs the mistakes people make, and checks each exits with the
// README's code, says what is wrong, and writes nothing but JSON lines to stderr.
func TestExitCodesAndJSONLines(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	ids := b.registerFew(t, 1)
	id := fmt.Sprint(ids[0])
	const token = "s3cretwebhooktoken"
	socialKey := base64.StdEncoding.EncodeToString(make([]byte, 32))
	otherDB := withURL(t, b.url, func(u *url.URL) { u.Path = "/no_such_database" })
	otherUser := withURL(t, b.url, func(u *url.URL) { u.User = url.UserPassword("no_such_role", "pw") })
	authors := func(body string) string {
		path := filepath.Join(t.TempDir(), "authors")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return "BITRIX_AUTHOR_WEBHOOKS=" + path
	}
	mainHook := "BITRIX_WEBHOOK_URL=https://portal.example/rest/1/" + token + "/"
	tests := []struct {
		args    []string
		env     []string
		code    int
		want    string
		stdout  string // part of stdout, when it matters
		noRunOf string // a command that must leave no runs row
		notWant string // what stderr must not say (raw Go errors)
	}{
		{args: []string{"help", "nosuch"}, code: exitUsage, want: "invalid subcommand: nosuch"},
		{args: []string{"nosuch", "--help"}, code: exitUsage, want: "invalid subcommand: nosuch"},
		{args: []string{"bitrix", "nosuch", "--help"}, code: exitUsage, want: "invalid subcommand: nosuch"},
		{args: []string{"help", "status", "set"}, code: exitOK, stdout: "social"},
		{args: []string{"--help"}, code: exitOK, stdout: "bitrix plan"},
		{args: []string{"--help"}, code: exitOK, stdout: "status or plan"},
		{args: []string{"--help"}, code: exitOK, stdout: "social-account sync"},
		{args: []string{"bitrix", "users", "--help"}, code: exitOK, stdout: "every imported record"},
		{args: []string{"show", "habr", "abc"}, code: exitUsage, want: `\"abc\" is not a whole number`, notWant: "strconv"},
		{args: []string{"status", "set", "social", "--id", "1", "--to", "profile_pending", "--reason", "x"}, code: exitFailed, stdout: "social_accounts 1: refused"},
		{args: []string{"status", "set", "social", "--id", "1", "--to", "bogus", "--reason", "x"}, code: exitUsage, want: `unknown social status \"bogus\"`},
		{args: []string{"social", "status", "--account", "nobody"}, code: exitFailed, want: `no tracked account \"nobody\"`},
		{args: []string{"show", "social", "nobody"}, code: exitFailed, want: `no social account or post \"nobody\"`},
		{args: []string{"social", "accounts", "add", "--username", "x y"}, env: []string{"SOCIAL_TOKEN_KEY=" + socialKey},
			code: exitFailed, want: "not an Instagram username"},
		{args: nil, code: exitUsage, want: "a command is required"},
		{args: []string{"help"}, code: exitOK, stdout: "Usage: ingest"},
		{args: []string{"help", "status", "set"}, code: exitOK, stdout: "--reason"},
		{args: []string{"status", "--bogus"}, code: exitUsage, want: "unknown argument --bogus"},
		{args: []string{"show", "habr", "abc"}, code: exitUsage, want: "abc"},
		{args: []string{"status", "set", "habr", "--id", id, "--to", "bogus", "--reason", "x"}, code: exitUsage, want: `unknown habr status \"bogus\"`},
		{args: []string{"status", "set", "habr", "--id", "abc", "--to", "extract_pending", "--reason", "x"}, code: exitUsage, want: `--id \"abc\": not a record id`},
		{args: []string{"status", "set", "nowhere", "--id", id, "--to", "x", "--reason", "x"}, code: exitUsage, want: `unknown source \"nowhere\"`},
		{args: []string{"status", "set", "habr", "--id", id, "--to", "extract_broken", "--reason", "x"}, env: []string{"USER="}, code: exitUsage, want: "--by NAME is required"},
		{args: []string{"status", "ack", "bitrix", "--id", "1", "--reason", "x"}, env: []string{"USER="}, code: exitUsage, want: "--by NAME is required"},
		{args: []string{"bitrix", "users", "get"}, env: []string{"BITRIX_WEBHOOK_URL=https://p.example/rest/1/" + token + "/", "BITRIX_TEST_LIMIT=ten"}, code: exitConfig, want: `BITRIX_TEST_LIMIT: \"ten\" is not a whole number`, notWant: "strconv"},
		{args: []string{"bitrix", "chats", "get"}, env: []string{"BITRIX_WEBHOOK_URL=https://p.example/rest/1/" + token + "/", "BITRIX_CHAT_RESCAN=maybe"}, code: exitConfig, want: "BITRIX_CHAT_RESCAN"},
		{args: []string{"status"}, env: []string{"LOG_LEVEL=loud"}, code: exitConfig, want: "LOG_LEVEL"},
		{args: []string{"status"}, env: []string{"DATABASE_URL=" + otherDB}, code: exitConfig, want: `database \"no_such_database\" does not exist`},
		{args: []string{"status"}, env: []string{"DATABASE_URL=" + otherUser}, code: exitConfig, want: `refused user \"no_such_role\"`},
		{args: []string{"status"}, env: []string{"DATABASE_URL=postgres://ingest:pw@127.0.0.1:1/x?connect_timeout=5"}, code: exitFailed, want: "cannot connect to Postgres"},
		{args: []string{"show", "habr", "999"}, code: exitFailed, want: "no Habr publication 999"},
		{args: []string{"bitrix", "users", "get"}, env: []string{"BITRIX_WEBHOOK_URL=http://portal.example/rest/1/" + token + "/"},
			code: exitConfig, want: "clear text", noRunOf: "bitrix users get"},
		{args: []string{"bitrix", "users", "get"}, env: []string{"BITRIX_WEBHOOK_URL=https://portal.example/" + token + "/"},
			code: exitConfig, want: "no /rest/USER_ID/TOKEN/ path", noRunOf: "bitrix users get"},
		{args: []string{"bitrix", "users", "set"}, env: []string{"TARGET_WEBHOOK_URL=https://target.example/api/"},
			code: exitConfig, want: "TARGET_WEBHOOK_URL has no token", noRunOf: "bitrix users set"},
		{args: []string{"bitrix", "feed", "get"}, env: []string{mainHook, authors("# authors\n12 https://portal.example/rest/13/" + token + "/\n")},
			code: exitConfig, want: "line 2: the webhook is not user 12's", noRunOf: "bitrix feed get"},
		{args: []string{"bitrix", "feed", "get"}, env: []string{mainHook, authors("12 https://other.example/rest/12/" + token + "/\n")},
			code: exitConfig, want: "not on BITRIX_WEBHOOK_URL's portal portal.example", noRunOf: "bitrix feed get"},
		{args: []string{"bitrix", "feed", "get"}, env: []string{mainHook, authors("12=https://portal.example/rest/12/" + token + "/\n")},
			code: exitConfig, want: "line 1: want `USER_ID https://PORTAL/rest/USER_ID/TOKEN/`", noRunOf: "bitrix feed get"},
		{args: []string{"bitrix", "feed", "get"}, env: []string{mainHook, authors("12 http://portal.example/rest/12/" + token + "/\n")},
			code: exitConfig, want: "clear text", noRunOf: "bitrix feed get"},
	}
	for _, tt := range tests {
		cmd, stdout, stderr := b.command(tt.args...)
		cmd.Env = append(cmd.Env, tt.env...)
		_ = cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stdout.String(), tt.stdout) {
			t.Errorf("ingest %v %v = exit %d\nstdout: %.300s\nstderr: %s\nwant exit %d, stderr mentioning %q", tt.args, tt.env, code, stdout, stderr, tt.code, tt.want)
		}
		checkJSONLines(t, tt.args, stderr.String())
		if tt.notWant != "" && strings.Contains(stderr.String(), tt.notWant) {
			t.Errorf("ingest %v: stderr says %q:\n%s", tt.args, tt.notWant, stderr)
		}
		if strings.Contains(stderr.String(), token) {
			t.Errorf("ingest %v: the token leaked:\n%s", tt.args, stderr)
		}
		if tt.noRunOf != "" {
			if n := b.scalar(t, "SELECT count(*) FROM runs WHERE command = $1", tt.noRunOf); n != 0 {
				t.Errorf("ingest %v: a configuration error recorded %d runs", tt.args, n)
			}
		}
	}
}

// checkJSONLines fails unless every line of stderr is a JSON object with a level and a message.
func checkJSONLines(t *testing.T, args []string, stderr string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level == "" || rec.Msg == "" {
			t.Errorf("ingest %v: stderr line is not a JSON log line: %q", args, line)
		}
	}
}

func withURL(t *testing.T, raw string, edit func(*url.URL)) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	edit(u)
	return u.String()
}

// TestSchemaVersionChecks runs commands against a fresh, an older and a newer schema.
func TestSchemaVersionChecks(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	fresh := &cliBundle{ctx: b.ctx, url: freshDatabase(t), base: b.base}
	readOnly := [][]string{
		{"status"}, {"status", "habr", "--json"}, {"show", "habr", "1"}, {"bitrix", "status"},
		{"status", "set", "habr", "--id", "1", "--to", "extract_pending", "--reason", "x"},
		{"show", "bitrix", "users", "1"}, {"extract", "habr"},
	}
	for _, args := range readOnly {
		code, _, stderr := fresh.run(t, args...)
		if code != exitConfig || !strings.Contains(stderr, "run `ingest migrate`") || !strings.Contains(stderr, "at version 0") {
			t.Errorf("fresh schema: ingest %v = exit %d\n%s\nwant %d and run `ingest migrate`", args, code, stderr, exitConfig)
		}
		checkJSONLines(t, args, stderr)
	}
	if code, _, stderr := fresh.run(t, "migrate"); code != 0 {
		t.Fatalf("migrate on a fresh database = exit %d\n%s", code, stderr)
	}
	if code, _, stderr := fresh.run(t, "status"); code != 0 {
		t.Errorf("status after migrate = exit %d\n%s", code, stderr)
	}

	var newest int64
	if err := b.pool.QueryRow(b.ctx, "SELECT max(version_id) FROM goose_db_version").Scan(&newest); err != nil {
		t.Fatal(err)
	}
	// A newer binary migrated this database: this one refuses everything, migrate included.
	if _, err := b.pool.Exec(b.ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("at version 99999, newer than this binary (ingest dev knows versions up to %d)", newest)
	for _, args := range [][]string{{"status"}, {"migrate"}, {"discover", "habr"}} {
		code, _, stderr := b.run(t, args...)
		if code != exitConfig || !strings.Contains(stderr, want) {
			t.Errorf("newer schema: ingest %v = exit %d\n%s\nwant %d and %q", args, code, stderr, exitConfig, want)
		}
	}
	// migrate status lists the newer version too, and refuses the schema like the others.
	code, stdout, stderr := b.run(t, "migrate", "status")
	if code != exitConfig || !strings.Contains(stderr, want) || !regexp.MustCompile(`99999\s+\(unknown to this binary\)`).MatchString(stdout) {
		t.Errorf("newer schema: migrate status = exit %d\nstdout: %s\nstderr: %s\nwant %d, version 99999 listed and %q", code, stdout, stderr, exitConfig, want)
	}
	// An older schema: the newest migration is not applied.
	if _, err := b.pool.Exec(b.ctx, "DELETE FROM goose_db_version WHERE version_id >= $1", newest); err != nil {
		t.Fatal(err)
	}
	var previous int64 // versions are not consecutive: each change reserved its own number
	if err := b.pool.QueryRow(b.ctx, "SELECT max(version_id) FROM goose_db_version WHERE version_id < $1", newest).Scan(&previous); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = b.run(t, "status")
	want = fmt.Sprintf("at version %d, this binary needs version %d: run `ingest migrate` first", previous, newest)
	if code != exitConfig || !strings.Contains(stderr, want) {
		t.Errorf("older schema: status = exit %d\n%s\nwant %q", code, stderr, want)
	}
	if n := b.scalar(t, "SELECT count(*) FROM runs"); n != 0 {
		t.Errorf("%d runs recorded by refused commands", n)
	}
}

// freshDatabase creates an empty database (no migrations) on the test server.
func freshDatabase(t *testing.T) string {
	t.Helper()
	admin := dbtest.ServerURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("ingest_fresh_%d", rand.Uint64())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	return withURL(t, admin, func(u *url.URL) { u.Path = "/" + name })
}
