package fetch

import (
	"fmt"
	"net/url"
	"strings"
)

// habrHosts are the hosts whose links are re-pointed at the configured
// origin. Records keep real Habr URLs; only where they are fetched from
// changes.
var habrHosts = []string{"habr.com", "www.habr.com"}

// resolve maps ref onto the configured origin, or fails with ErrOffOrigin.
func (c *Client) resolve(ref string) (*url.URL, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w: %w", ref, ErrOffOrigin, err)
	}
	if u.User != nil {
		return nil, fmt.Errorf("fetch %s: %w: URL has credentials", u.Redacted(), ErrOffOrigin)
	}
	switch {
	case !u.IsAbs() && u.Host == "" && strings.HasPrefix(u.Path, "/"):
		// A path on the origin. ("//host/x" has a host and is rejected.)
	case u.IsAbs() && strings.EqualFold(u.Scheme, c.base.Scheme) && strings.EqualFold(u.Host, c.base.Host):
	case u.IsAbs() && (u.Scheme == "https" || u.Scheme == "http") && isHabr(u.Hostname()) && u.Port() == "":
	default:
		return nil, fmt.Errorf("fetch %s: %w (want a path or a URL on %s or habr.com)", ref, ErrOffOrigin, c.base)
	}
	return &url.URL{
		Scheme:   c.base.Scheme,
		Host:     c.base.Host,
		Path:     u.Path,
		RawPath:  u.RawPath,
		RawQuery: u.RawQuery,
	}, nil
}

func isHabr(host string) bool {
	for _, h := range habrHosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}
