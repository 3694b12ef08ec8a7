package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// BITRIX_AUTHOR_WEBHOOKS reaches feed get: the author named is read through their own webhook,
// with the comment texts an administrator's webhook is refused, and the tokens appear nowhere.
func TestBitrixAuthorWebhooksFile(t *testing.T) {
	t.Parallel()
	b := setupCLI(t)
	const token, author = "s3cretwebhooktoken", "s3cretauthortoken"
	portal := bitrixfake.New(bitrixfake.Options{Users: 20, Groups: 2, Posts: 15, Seed: 9, Token: token})
	ps := httptest.NewServer(portal)
	t.Cleanup(ps.Close)
	env := []string{"BITRIX_WEBHOOK_URL=" + ps.URL + portal.WebhookPath()}
	run := func(args ...string) string {
		t.Helper()
		cmd, stdout, stderr := b.command(args...)
		cmd.Env = append(cmd.Env, env...)
		_ = cmd.Run()
		out := stdout.String() + stderr.String()
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("ingest %v = exit %d\n%s", args, code, out)
		}
		if strings.Contains(out, token) || strings.Contains(out, author) {
			t.Errorf("ingest %v leaked a token:\n%s", args, out)
		}
		return out
	}
	run("bitrix", "users", "get")
	run("bitrix", "groups", "get")
	run("bitrix", "feed", "get")
	const withheld = `SELECT count(*) FROM bitrix_records WHERE entity = 'feed_comments' AND payload->>'author_id' = $1
AND strpos(payload->>'_unreachable', 'text withheld') > 0`
	top := b.scalar(t, `SELECT coalesce(max((payload->>'author_id')::bigint), 0) FROM bitrix_records WHERE entity = 'feed_comments'
AND strpos(payload->>'_unreachable', 'text withheld') > 0`)
	id := strconv.FormatInt(top, 10)
	before := b.scalar(t, withheld, id)
	if before == 0 {
		t.Fatal("no comment text withheld")
	}

	file := filepath.Join(t.TempDir(), "authors")
	body := "# the authors who gave their webhooks\n" + id + " " + ps.URL + portal.AddWebhook(int(top), author, false) + "\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(env, "BITRIX_AUTHOR_WEBHOOKS="+file)
	if out := run("bitrix", "feed", "get"); !strings.Contains(out, "read through their own webhooks") {
		t.Errorf("feed get does not say it reads authors through their webhooks:\n%s", out)
	}
	if n := b.scalar(t, withheld, id); n != 0 {
		t.Errorf("author %s: %d of %d comments still withheld", id, n, before)
	}
}
