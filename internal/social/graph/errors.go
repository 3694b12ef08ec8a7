package graph

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Throttling codes (research/social.md §1.4): 4 the app's limit, 17 the user's, 32 a Pages
// request limit, 613 a custom limit, 80001 the Pages business-use-case limit, 80002 the
// Instagram one.
var throttleCodes = []int{4, 17, 32, 613, 80001, 80002}

// CodeTokenInvalid is the Graph API's "access token expired, revoked or invalid".
const CodeTokenInvalid = 190

// APIError is an error envelope from the Graph API:
//
//	{"error": {"message": ..., "type": "OAuthException", "code": 80002, "error_subcode": ...,
//	           "is_transient": false, "fbtrace_id": ...}}
type APIError struct {
	HTTPStatus int
	Code       int
	Subcode    int
	Type       string
	Message    string
	Transient  bool
	FBTraceID  string
	// RegainAfter is the longest estimated_time_to_regain_access of the response's usage
	// headers: how long the platform says throttling lasts (zero when it did not say).
	RegainAfter time.Duration
	// Endpoint labels the request ("media", "comments") for messages.
	Endpoint string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("graph %s: HTTP %d, code %d", e.Endpoint, e.HTTPStatus, e.Code)
	if e.Subcode != 0 {
		msg += fmt.Sprintf("/%d", e.Subcode)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Throttled reports a throttling answer: one of the rate-limit codes, or HTTP 429 whatever the
// body says.
func (e *APIError) Throttled() bool {
	return slices.Contains(throttleCodes, e.Code) || e.HTTPStatus == http.StatusTooManyRequests
}

// platformCodes are the Platform Rate Limit codes (research/social.md §1.4): 4 the app's
// limit, 17 the user's, 32 a Pages request limit, 613 a custom limit. Business discovery is
// counted against the Platform Rate Limits (200 calls an hour times the app's users, app-wide);
// connected Instagram calls against each app user's Business Use Case budget (80001, 80002).
var platformCodes = []int{4, 17, 32, 613}

// PlatformLimit reports a throttling answer on the Platform Rate Limits (codes 4, 17, 32, 613),
// the budget business discovery calls share app-wide; the others (80001, 80002, HTTP 429 alone)
// concern the Business Use Case budget of one app user's token.
func (e *APIError) PlatformLimit() bool { return slices.Contains(platformCodes, e.Code) }

// TokenInvalid reports an expired, revoked or otherwise invalid access token (code 190).
func (e *APIError) TokenInvalid() bool { return e.Code == CodeTokenInvalid }

// Permission reports a missing permission: code 10, or 200-299.
func (e *APIError) Permission() bool {
	return e.Code == 10 || (e.Code >= 200 && e.Code <= 299)
}

// UserNotFound reports business_discovery's answer for a username it cannot read: it does not
// exist, is a personal (consumer) account, or is age-gated (code 110, subcode 2207013).
func (e *APIError) UserNotFound() bool { return e.Code == 110 || e.Subcode == 2207013 }

// Retryable reports an answer that may pass by itself: the platform says so, an unknown or
// service error (codes 1, 2), or an HTTP 5xx.
func (e *APIError) Retryable() bool {
	return e.Transient || e.Code == 1 || e.Code == 2 || e.HTTPStatus >= 500
}

// TransportError is a request that got no usable answer: connection refused or reset, a
// timeout, a body that is not the Graph API's JSON.
type TransportError struct {
	Endpoint string
	Err      error
}

func (e *TransportError) Error() string { return fmt.Sprintf("graph %s: %v", e.Endpoint, e.Err) }

func (e *TransportError) Unwrap() error { return e.Err }

// AsAPI returns err's *APIError, if it has one.
func AsAPI(err error) (*APIError, bool) {
	var ae *APIError
	ok := errors.As(err, &ae)
	return ae, ok
}

// IsRetryable reports an error worth trying again later: a transport failure or a retryable
// API answer. Throttling is not: it parks the token instead (see APIError.Throttled).
func IsRetryable(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	if ae, ok := AsAPI(err); ok {
		return ae.Retryable() && !ae.Throttled()
	}
	return false
}

// RefusedError is an answer the client refused to take: one larger than its cap, or a
// redirect off the base URL's origin. Asking again would get the same, so it is not retryable.
type RefusedError struct {
	Endpoint string
	Err      error
}

func (e *RefusedError) Error() string { return fmt.Sprintf("graph %s: %v", e.Endpoint, e.Err) }

func (e *RefusedError) Unwrap() error { return e.Err }
