package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
)

// BITRIX_AUTHOR_WEBHOOKS names a file of other users' own incoming webhooks, one a line:
//
//	# portal user id, then that user's incoming webhook (secret)
//	12 https://portal.bitrix24.ru/rest/12/TOKEN/
//
// The portal sends an author's feed comments with their text only to the author's own webhook
// (an administrator's gets them empty); feed get reads those authors' comments through theirs.
// Every line is checked as BITRIX_WEBHOOK_URL is, its user id must be the line's, and its portal
// the main webhook's; the tokens are secrets, redacted everywhere and stored nowhere.

var authorLine = regexp.MustCompile(`^(\d+)\s+(\S+)$`)

// readAuthorWebhooks reads and checks the file, registering every token for redaction; it
// returns the webhooks by portal user id. main is BITRIX_WEBHOOK_URL ("" when unset).
func readAuthorWebhooks(path, main string, redact func(string)) (map[string]string, error) {
	const name = "BITRIX_AUTHOR_WEBHOOKS"
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, configError{fmt.Sprintf("%s: %v", name, err)}
	}
	var host string
	if u, err := url.Parse(main); err == nil && main != "" {
		host = u.Host
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s %s line %d", name, path, n)
		m := authorLine.FindStringSubmatch(line)
		if m == nil {
			// The line may hold a token: it is not shown.
			return nil, configError{where + ": want `USER_ID https://PORTAL/rest/USER_ID/TOKEN/`"}
		}
		user, hook := m[1], m[2]
		token, err := checkPortalWebhook(where, hook)
		redact(token)
		if err != nil {
			return nil, err
		}
		u, _ := url.Parse(hook) // parsed by checkPortalWebhook
		switch {
		case !strings.HasPrefix(u.Path, "/rest/"+user+"/"):
			return nil, configError{fmt.Sprintf("%s: the webhook is not user %s's (its path must start /rest/%s/)", where, user, user)}
		case host != "" && u.Host != host:
			return nil, configError{fmt.Sprintf("%s: the webhook is on %s, not on BITRIX_WEBHOOK_URL's portal %s", where, u.Host, host)}
		case out[user] != "":
			return nil, configError{fmt.Sprintf("%s: user %s has a webhook already", where, user)}
		}
		out[user] = hook
	}
	if err := sc.Err(); err != nil {
		return nil, configError{fmt.Sprintf("%s: %v", name, err)}
	}
	return out, nil
}

// authorSources builds a client for every author's webhook, under the run's one rate limit.
func authorSources(hooks map[string]string, opts rest.Options) (map[string]engine.Source, error) {
	if len(hooks) == 0 {
		return nil, nil
	}
	out := make(map[string]engine.Source, len(hooks))
	for user, hook := range hooks {
		src, err := rest.New(hook, opts)
		if err != nil {
			return nil, configError{fmt.Sprintf("BITRIX_AUTHOR_WEBHOOKS: user %s: %v", user, err)}
		}
		out[user] = src
	}
	opts.Logger.Info("feed comments of these authors are read through their own webhooks", "authors", len(out))
	return out, nil
}
