package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/ingest-dev/ingest/internal/redact"
)

// Sentinels for failures that are not an HTTP status. Errors returned by Get
// wrap exactly one of them (check with errors.Is) and name the URL.
var (
	// ErrConnection: the request never got a response (DNS, refused,
	// reset, TLS).
	ErrConnection = errors.New("connection failed")
	// ErrTimeout: the connect timeout or the whole-request timeout expired.
	// It also wraps the underlying net error.
	ErrTimeout = errors.New("timed out")
	// ErrTruncated: the body ended early (shorter than Content-Length, reset
	// mid-body) or could not be decoded (corrupt gzip, an encoding we did
	// not ask for).
	ErrTruncated = errors.New("truncated body")
	// ErrTooLarge: the decompressed body is over Config.MaxBodyBytes.
	ErrTooLarge = errors.New("body too large")
	// ErrOffOrigin: the ref is not on the configured origin (nor on
	// habr.com); nothing was requested.
	ErrOffOrigin = errors.New("off-origin URL")
)

// StatusError is a response with a non-2xx status. Redirects are not
// followed, so a 3xx arrives here too, with its Location.
type StatusError struct {
	URL      string
	Code     int
	Location string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("fetch %s: HTTP %d %s", e.URL, e.Code, http.StatusText(e.Code))
	if e.Location != "" {
		msg += " (Location: " + redact.New().String(e.Location) + ")" // credentials in it masked
	}
	return msg
}

// IsNetwork reports whether err means the page could not be obtained from
// the source: an HTTP error status or redirect, a timeout, a connection
// failure, a truncated or oversized body. The spec calls all of these
// network errors; the Habr extractor marks such records extract_failed and
// retries them on a later run.
//
// It is false for nil, for ErrOffOrigin (nothing was requested and retrying
// cannot help: the record's link is wrong) and for the caller's own context
// ending (context.Canceled or the caller's deadline): a run that is
// stopping must not mark records as failed.
func IsNetwork(err error) bool {
	var status *StatusError
	return errors.As(err, &status) ||
		errors.Is(err, ErrConnection) ||
		errors.Is(err, ErrTimeout) ||
		errors.Is(err, ErrTruncated) ||
		errors.Is(err, ErrTooLarge)
}

// classify turns a transport or body-read error into a classified one.
// fallback is the class used when err is neither a timeout nor the caller's
// context ending.
func classify(ctx context.Context, target string, err error, fallback error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // it repeats the method and URL we add ourselves
	}
	// Check the caller's context first: http.Client timeouts also match
	// context.DeadlineExceeded, but only the caller's context ending means
	// "stop", not "the source is slow".
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("fetch %s: %w", target, ctxErr)
	}
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("fetch %s: %w", target, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return fmt.Errorf("fetch %s: %w: %w", target, ErrTimeout, err)
	}
	return fmt.Errorf("fetch %s: %w: %w", target, fallback, err)
}
