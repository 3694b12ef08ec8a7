package httplimit

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ingest-dev/ingest/internal/redact"
)

// MaxRedirects is how many redirects within its origin one request may follow.
const MaxRedirects = 5

// Origin returns u's origin as the web defines it: scheme, host and port, lower-cased, the
// scheme's default port made explicit (https://Host and https://host:443 are one origin).
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// SameOrigin reports whether a and b share an origin. From https to http never does, nor from
// http to https: either changes the scheme.
func SameOrigin(a, b *url.URL) bool { return Origin(a) == Origin(b) }

// RedirectError is a redirect a client refused to follow.
type RedirectError struct {
	// Call names the request without its secrets.
	Call string
	// Status is the redirect's HTTP status.
	Status int
	// Location is where it pointed, with credentials and query values masked.
	Location string
	// Reason says why it was refused.
	Reason string
	// Insecure is set when the redirect left https for http.
	Insecure bool
	// Hint, when set, tells the operator what to change.
	Hint string
}

func (e *RedirectError) Error() string {
	msg := fmt.Sprintf("%s: refused the redirect (HTTP %d) to %s: %s", e.Call, e.Status, e.Location, e.Reason)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Masked returns u as it may be shown: its user info, query values and fragment masked, and
// what r knows as a secret (a token in the path) too.
func Masked(u *url.URL, r *redact.Redactor) string {
	m := *u
	if m.User != nil {
		m.User = url.User(redact.Mask)
	}
	if m.RawQuery != "" {
		q := m.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = redact.Mask
			}
			q[k] = vs
		}
		m.RawQuery = q.Encode()
	}
	if m.Fragment != "" {
		m.Fragment, m.RawFragment = redact.Mask, ""
	}
	return r.String(m.String())
}

// Check decides on a redirect from the request to from: it returns where to go when location
// stays on from's origin, else a *RedirectError. Nothing off the origin is ever followed,
// whatever the status: credentials of the configured origin must not leave it.
func Check(call string, status int, from *url.URL, location string, r *redact.Redactor) (*url.URL, error) {
	refuse := func(to, reason string) *RedirectError {
		return &RedirectError{Call: call, Status: status, Location: to, Reason: reason}
	}
	if location == "" {
		return nil, refuse("nowhere", "the answer has no Location")
	}
	to, err := from.Parse(location)
	if err != nil {
		return nil, refuse("an address that does not parse", "bad Location")
	}
	if !SameOrigin(from, to) {
		re := refuse(Masked(to, r), offOrigin(from, to))
		re.Insecure = downgrade(from, to)
		return nil, re
	}
	return to, nil
}

func downgrade(from, to *url.URL) bool {
	return strings.EqualFold(from.Scheme, "https") && strings.EqualFold(to.Scheme, "http")
}

func offOrigin(from, to *url.URL) string {
	if downgrade(from, to) {
		return "it leaves https for plain http"
	}
	return fmt.Sprintf("another origin than %s", Origin(from))
}

// SameOriginRedirects is an http.Client CheckRedirect that follows a redirect only within the
// first request's origin, only when it keeps the request's method (Go turns a POST into a GET
// without its body on 301, 302 and 303; 307 and 308 re-send it as it was), and at most
// MaxRedirects times. A refusal is a *RedirectError naming the call by call(first request).
func SameOriginRedirects(call func(*http.Request) string, r *redact.Redactor) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first, prev := via[0], via[len(via)-1]
		status := 0
		if req.Response != nil {
			status = req.Response.StatusCode
		}
		refuse := func(reason string) error {
			return &RedirectError{Call: call(first), Status: status, Location: Masked(req.URL, r), Reason: reason,
				Insecure: downgrade(first.URL, req.URL)}
		}
		switch {
		case !SameOrigin(first.URL, req.URL):
			return refuse(offOrigin(first.URL, req.URL))
		case req.Method != prev.Method:
			return refuse(fmt.Sprintf("it would turn the %s into a %s without its body", prev.Method, req.Method))
		case len(via) > MaxRedirects:
			return refuse(fmt.Sprintf("more than %d redirects", MaxRedirects))
		}
		return nil
	}
}
