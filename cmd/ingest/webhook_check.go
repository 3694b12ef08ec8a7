package main

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// The checks here run while the configuration is read, before anything connects or a run is
// recorded: a webhook URL of the wrong shape used to cost a failed run and ~9 s of retries. Their
// messages name what is wrong and never hold the token.

// portalWebhookPath is the path of a Bitrix24 incoming webhook, /rest/USER_ID/TOKEN/, possibly
// under a prefix (an on-premise portal served from a subdirectory).
var portalWebhookPath = regexp.MustCompile(`^(?:/[^/]+)*/rest/([^/]*)/([^/]*)/?$`)

// webhookToken is what Bitrix24 issues as a webhook's secret: letters and digits.
var webhookToken = regexp.MustCompile(`^[A-Za-z0-9_]{8,}$`)

// checkPortalWebhook checks a Bitrix24 incoming webhook URL, https://PORTAL/rest/USER/TOKEN/,
// and returns the token so that the caller registers it as a secret.
func checkPortalWebhook(name, raw string) (token string, err error) {
	const shape = "want https://PORTAL/rest/USER_ID/TOKEN/"
	u, err := parseSecretURL(name, raw, shape)
	if err != nil {
		return "", err
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", configError{fmt.Sprintf("%s must have no user info, query or fragment (%s)", name, shape)}
	}
	m := portalWebhookPath.FindStringSubmatch(u.Path)
	if m == nil {
		return "", configError{fmt.Sprintf("%s has no /rest/USER_ID/TOKEN/ path (%s; the path is the webhook's address shown in the portal)", name, shape)}
	}
	userID, token := m[1], m[2]
	if !isDigits(userID) {
		return token, configError{fmt.Sprintf("%s: the part after /rest/ must be the numeric id of the webhook's user (%s)", name, shape)}
	}
	if !webhookToken.MatchString(token) {
		return token, configError{fmt.Sprintf("%s: the token after /rest/%s/ is missing or malformed: want at least 8 letters or digits (%s)", name, userID, shape)}
	}
	return token, checkCleartext(name, u)
}

// checkTargetURL checks the target import API URL, https://import:TOKEN@HOST/PATH/, and
// returns the token so that the caller registers it as a secret.
func checkTargetURL(name, raw string) (token string, err error) {
	const shape = "want https://import:TOKEN@HOST/PATH/"
	u, err := parseSecretURL(name, raw, shape)
	if err != nil {
		return "", err
	}
	if u.User != nil {
		token, _ = u.User.Password()
	}
	if token == "" {
		return "", configError{fmt.Sprintf("%s has no token: put it as the URL's password (%s)", name, shape)}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return token, configError{fmt.Sprintf("%s must have no query or fragment (%s)", name, shape)}
	}
	return token, checkCleartext(name, u)
}

// parseSecretURL parses an absolute http(s) URL without quoting it in its errors.
func parseSecretURL(name, raw, shape string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, configError{fmt.Sprintf("%s does not parse as a URL (%s)", name, shape)}
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, configError{fmt.Sprintf("%s: scheme %q is not https (%s)", name, u.Scheme, shape)}
	}
	if u.Hostname() == "" {
		return nil, configError{fmt.Sprintf("%s has no host (%s)", name, shape)}
	}
	return u, nil
}

// checkCleartext refuses http:// anywhere but this machine: the token travels in every request.
func checkCleartext(name string, u *url.URL) error {
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return configError{fmt.Sprintf("%s: http:// to %s would send the token in clear text; use https:// (http is accepted for loopback addresses only)", name, u.Hostname())}
	}
	return nil
}

// isLoopback reports whether host names this machine: localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
