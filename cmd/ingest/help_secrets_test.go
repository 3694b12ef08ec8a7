package main

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/social"
)

// helpSecrets sets every secret the program reads from the environment to a distinctive value
// and returns the strings that must never be printed: each whole value and its password or
// token part (a redactor that masks the shape of a URL's password still prints a token
// that stands alone).
func helpSecrets(t *testing.T) []string {
	key := base64.StdEncoding.EncodeToString([]byte("SocialKeyQz7-0123456789abcdefghi"))
	vars := map[string][]string{
		"DATABASE_URL":       {"postgres://ingest:DbPwQz7Secret@db.example:5432/ingest", "DbPwQz7Secret"},
		"BITRIX_WEBHOOK_URL": {"https://portal.bitrix24.ru/rest/1/WhTokQz7secret/", "WhTokQz7secret"},
		"TARGET_WEBHOOK_URL": {"https://import:TgTokQz7secret@target.example/api/", "TgTokQz7secret"},
		"PUSHGATEWAY_URL":    {"https://push:PushPwQz7secret@push.example/", "PushPwQz7secret"},
		"SOCIAL_TOKEN_KEY":   {key, key},
	}
	for _, p := range social.Providers {
		env := "SOCIAL_ENRICH_" + strings.ToUpper(p.Name)
		vars[env+"_URL"] = []string{"https://enrich:EnPwQz7" + p.Name + "@enrich.example/", "EnPwQz7" + p.Name}
		vars[env+"_TOKEN"] = []string{"EnTokQz7" + p.Name + "secret", "EnTokQz7" + p.Name + "secret"}
	}
	var never []string
	for name, v := range vars {
		t.Setenv(name, v[0])
		never = append(never, v...)
	}
	return never
}

// TestHelpAndUsageNeverShowSecrets walks every help level and usage error with every secret set
// in the environment, in text and JSON log formats, and fails on any secret in the output.
func TestHelpAndUsageNeverShowSecrets(t *testing.T) {
	never := helpSecrets(t)
	root, _ := commandTree(pipelines())
	var lines [][]string
	visit := func(words []string, c *cliCommand) {
		lines = append(lines,
			append(slices.Clone(words), "--help"),
			append([]string{"help"}, words...),
			append(slices.Clone(words), "--no-such-flag"))
		if len(c.subs) > 0 {
			lines = append(lines, append(slices.Clone(words), "nosuchcommand"))
			if c.act == nil {
				lines = append(lines, words) // "needs a subcommand", with the whole help
			}
		}
	}
	visit(nil, root)
	walkTree(root, nil, visit)
	// Secrets given as flags: go-arg would show those as defaults too.
	flagged := []string{"--database-url", "postgres://ingest:FlagPwQz7.example/ingest", "bitrix", "--webhook-url", "https://p.bitrix24.ru/rest/1/FlagWhQz7tok/",
		"--target-url", "https://import:FlagTgQz7tok@t.example/api/"}
	never = append(never, "FlagPwQz7", "FlagWhQz7tok", "FlagTgQz7tok")
	lines = append(lines, append(slices.Clone(flagged), "--help"), append(slices.Clone(flagged), "users", "get", "--help"),
		append(slices.Clone(flagged), "users", "--no-such-flag"), flagged,
		[]string{"social", "--token-key", "FlagKeyQz7", "--help"}, []string{"social", "--token-key", "FlagKeyQz7", "sync"})
	never = append(never, "FlagKeyQz7")
	sawSet := false
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Setenv("LOG_FORMAT", format)
			for _, argv := range lines {
				code, stdout, stderr := mainOut(t, argv...)
				if code != exitOK && code != exitUsage {
					t.Errorf("ingest %s = exit %d, want help or a usage error\nstderr: %.300s", strings.Join(argv, " "), code, stderr)
				}
				for _, s := range never {
					if strings.Contains(stdout, s) || strings.Contains(stderr, s) {
						t.Errorf("ingest %s (LOG_FORMAT=%s) prints the secret %q:\nstdout: %s\nstderr: %s", strings.Join(argv, " "), format, s, stdout, stderr)
					}
				}
				sawSet = sawSet || strings.Contains(stdout+stderr, "env: DATABASE_URL, set]")
			}
		})
	}
	if len(lines) < 300 {
		t.Errorf("walked %d command lines; the tree lost commands", len(lines))
	}
	if !sawSet {
		t.Error("no help said [env: DATABASE_URL, set]")
	}
}

func TestMarkSetEnv(t *testing.T) {
	env := map[string]string{"A_URL": "postgres://u:pw@h/db", "EMPTY": ""}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	for _, c := range []struct{ in, want string }{
		{"  --a URL   the a [env: A_URL]\n", "  --a URL   the a [env: A_URL, set]\n"},
		{"  --a URL   the a [default: x, env: A_URL]\n", "  --a URL   the a [default: x, env: A_URL, set]\n"},
		{"  --e   the e [env: EMPTY]\n", "  --e   the e [env: EMPTY, set but empty]\n"},
		{"  --u   the u [env: UNSET]\n", "  --u   the u [env: UNSET]\n"},
	} {
		if got := markSetEnv(c.in, lookup); got != c.want {
			t.Errorf("markSetEnv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
