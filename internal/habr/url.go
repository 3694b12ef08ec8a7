package habr

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// canonicalHost is where every Habr article lives today. The older hosts
// redirect here with the same path and the same article id.
const canonicalHost = "habr.com"

// knownHosts are the hosts that have served Habr articles, with or without
// "www.": the mobile site and the two pre-2018 sites merged into habr.com.
var knownHosts = map[string]bool{
	"habr.com":       true,
	"m.habr.com":     true,
	"habrahabr.ru":   true,
	"geektimes.ru":   true,
	"m.habrahabr.ru": true,
}

// articlePath matches every article URL shape Habr has used: an optional
// language, then a post, article, news or sandbox path, or a company blog,
// then the id. The id group accepts any segment so that a non-numeric id can
// be reported as such rather than as an unknown path.
var articlePath = regexp.MustCompile(
	`^/(?:(?:ru|en)/)?` +
		`(?:post|articles|news(?:/t)?|sandbox|` +
		`(?:company|companies)/[^/]+/(?:blog|articles|news(?:/t)?))` +
		`/([^/]+)/?$`)

// CanonicalURL returns the numeric article id of a Habr article URL and its
// canonical form: https://habr.com plus the path as given, ending in "/",
// without query (utm_* tracking) or fragment (#habracut).
//
// URLs on the legacy hosts habrahabr.ru and geektimes.ru and on the mobile
// host m.habr.com are rewritten to habr.com. Any other host is rejected, as
// is a path that is not an article (a hub, a user, a listing).
func CanonicalURL(raw string) (id int64, canonical string, err error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return 0, "", fmt.Errorf("article url: %w", err)
	}
	shown := u.Redacted() // never repeat a password, even a stranger's
	if u.Scheme != "http" && u.Scheme != "https" {
		return 0, "", fmt.Errorf("article url %q: want an http(s) url", shown)
	}
	if u.User != nil {
		return 0, "", fmt.Errorf("article url %q: credentials in url", shown)
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	if !knownHosts[host] {
		return 0, "", fmt.Errorf("article url %q: host %q is not habr.com or a former Habr host", shown, u.Hostname())
	}

	path := u.EscapedPath()
	m := articlePath.FindStringSubmatch(path)
	if m == nil {
		return 0, "", fmt.Errorf("article url %q: path %q is not an article path", shown, path)
	}
	id, err = parseArticleID(m[1])
	if err != nil {
		return 0, "", fmt.Errorf("article url %q: %w", shown, err)
	}
	if !strings.HasSuffix(path, "/") {
		path += "/"
	}
	return id, "https://" + canonicalHost + path, nil
}

var errBadID = errors.New("article id is not a positive number")

func parseArticleID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	// Compare with the formatted number so that "+5" and "05", which
	// ParseInt accepts, cannot give one article two canonical URLs.
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != s {
		return 0, fmt.Errorf("%w: %q", errBadID, s)
	}
	return id, nil
}
