package rest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ingest-dev/ingest/internal/httplimit"
)

// Error codes the client treats specially. Bitrix codes are compared
// case-insensitively: insufficient_scope and expired_token are lower case,
// the rest upper case.
const (
	CodeQueryLimitExceeded   = "QUERY_LIMIT_EXCEEDED"
	CodeOperationTimeLimit   = "OPERATION_TIME_LIMIT"
	CodeOverloadLimit        = "OVERLOAD_LIMIT"
	CodeMethodNotFound       = "ERROR_METHOD_NOT_FOUND"
	CodeNoAuthFound          = "NO_AUTH_FOUND"
	CodeExpiredToken         = "expired_token"
	CodeInvalidCredentials   = "INVALID_CREDENTIALS"
	CodeInsufficientScope    = "insufficient_scope"
	CodeAccessDenied         = "ACCESS_DENIED"
	CodeUserAccessError      = "user_access_error"
	CodePortalDeleted        = "PORTAL_DELETED"
	CodeBatchLengthExceeded  = "ERROR_BATCH_LENGTH_EXCEEDED"
	CodeBatchMethodForbidden = "ERROR_BATCH_METHOD_NOT_ALLOWED"
	CodeInternalServerError  = "INTERNAL_SERVER_ERROR"
	CodeUnexpectedAnswer     = "ERROR_UNEXPECTED_ANSWER"
)

// APIError is a failure the portal reported: an error envelope
// ({"error": ..., "error_description": ...}), a command's entry in a
// batch's result_error, or an answer that was not the JSON the API
// promises (an HTML page from the front proxy, for example).
type APIError struct {
	// Method is the REST method that failed; for a batch command, that
	// command's method.
	Method string
	// HTTPStatus is the status of the answer; 0 for a batch command, whose
	// errors arrive inside a 200 answer.
	HTTPStatus int
	// Code is the portal's error code. It may be empty: many methods
	// report only a description.
	Code string
	// Description is the portal's error_description, or a note on what
	// came back instead of JSON.
	Description string

	notJSON bool // an HTML page or other garbage instead of the envelope
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bitrix %s:", e.Method)
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " HTTP %d", e.HTTPStatus)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, ": %s", e.Description)
	}
	if hint := e.hint(); hint != "" {
		fmt.Fprintf(&b, " (%s)", hint)
	}
	return b.String()
}

// Is reports whether e has the given code, so callers can say
// errors.Is(err, &rest.APIError{Code: rest.CodeMethodNotFound}).
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Code != "" && e.codeIs(t.Code)
}

func (e *APIError) codeIs(code string) bool { return strings.EqualFold(e.Code, code) }

// hint explains the permanent failures an operator has to act on.
func (e *APIError) hint() string {
	switch {
	case e.codeIs(CodeNoAuthFound), e.codeIs(CodeExpiredToken), e.codeIs(CodeInvalidCredentials):
		return "the webhook URL is wrong, expired or was deleted; check BITRIX_WEBHOOK_URL"
	case e.codeIs(CodeInsufficientScope):
		if scope := ScopeOf(e.Method); scope != "" {
			return fmt.Sprintf("the webhook lacks the %q scope this method needs", scope)
		}
		return "the webhook lacks the scope this method needs"
	case e.codeIs(CodeMethodNotFound):
		return "the portal has no such method: misspelt, or its module is not installed"
	case e.codeIs(CodeAccessDenied), e.codeIs(CodeUserAccessError):
		return "the webhook's user is not allowed to do this; most list methods need an administrator"
	case e.codeIs(CodeOverloadLimit):
		return "Bitrix24 support blocked the REST API of this portal; it does not lift by waiting"
	case e.codeIs(CodeOperationTimeLimit):
		return "the method used up its operating time for the last 10 minutes"
	case e.codeIs(CodeQueryLimitExceeded):
		return "too many requests for the portal's leaky bucket"
	}
	return ""
}

// plainCode finds the code of a refusal sent as plain text instead of the JSON envelope (a
// portal under load has answered 503 with the bare words QUERY_LIMIT_EXCEEDED), so that it is
// handled as that refusal and not as an unknown server error; "" when the body names none.
func plainCode(body []byte) string {
	head := string(body[:min(len(body), 512)])
	for _, code := range []string{CodeQueryLimitExceeded, CodeOperationTimeLimit, CodeOverloadLimit} {
		if strings.Contains(strings.ToUpper(head), code) {
			return code
		}
	}
	return ""
}

// TransportError is a request that got no usable answer: a timeout, a
// refused or dropped connection, or a body cut short. It never carries the
// request URL, which contains the webhook token.
type TransportError struct {
	Method string
	Err    error
}

func (e *TransportError) Error() string { return fmt.Sprintf("bitrix %s: %v", e.Method, e.Err) }

// Unwrap returns the underlying network error.
func (e *TransportError) Unwrap() error { return e.Err }

// ErrCursorStalled means an ID-keyed listing got a page that did not move
// past its cursor: the method ignores the ID filter or the ordering, and
// walking on would loop forever.
var ErrCursorStalled = errors.New("bitrix listing: page did not advance past its cursor")

// ErrNotExecuted is returned for a batch command the portal skipped
// because an earlier command failed and the batch was sent with halt.
var ErrNotExecuted = errors.New("bitrix batch: command not executed after an earlier failure")

// HasCode reports whether err is (or wraps) an APIError with the code,
// compared case-insensitively.
func HasCode(err error, code string) bool {
	apiErr, ok := errors.AsType[*APIError](err)
	return ok && apiErr.codeIs(code)
}

// failure sorts errors by what the client does about them.
type failure int

const (
	failPermanent failure = iota // give up, tell the operator
	failRateLimit                // refused before execution: always safe to retry
	failOperating                // pause the method until its window frees up
	failTransient                // may have executed: retry reads only
)

func classify(err error) failure {
	if errors.Is(err, httplimit.ErrTooLarge) {
		return failPermanent // the portal would send the same answer again
	}
	if isTransport(err) || NoResult(err) {
		return failTransient // a batch command without a result: send it again
	}
	apiErr, ok := errors.AsType[*APIError](err)
	if !ok {
		return failPermanent
	}
	switch {
	case apiErr.codeIs(CodeQueryLimitExceeded):
		return failRateLimit
	case apiErr.codeIs(CodeOperationTimeLimit):
		return failOperating
	case apiErr.codeIs(CodeOverloadLimit), apiErr.codeIs(CodePortalDeleted):
		return failPermanent
	case apiErr.HTTPStatus >= 500:
		return failTransient
	case apiErr.notJSON && apiErr.HTTPStatus < 300:
		return failTransient // a proxy's page served as 200
	}
	return failPermanent
}

func isTransport(err error) bool {
	_, ok := errors.AsType[*TransportError](err)
	return ok
}

// IsPermanent reports whether retrying err cannot help: authentication,
// scope, permission and unknown-method failures, bad parameters, and
// OVERLOAD_LIMIT (a manual block). Rate limits, operating-time limits,
// 5xx answers and network failures are not permanent.
func IsPermanent(err error) bool { return classify(err) == failPermanent }

// ScopeOf returns the webhook scope a method belongs to, as the Bitrix24
// documentation names it, or "" for methods it does not know.
func ScopeOf(method string) string {
	m := strings.ToLower(method)
	prefixes := []struct{ prefix, scope string }{
		{"user.userfield.", "user.userfield"},
		{"user.", "user"},
		{"sonet_group.", "sonet"}, // docs: sonet-group-get.md "Scope: sonet"
		{"socialnetwork.", "socialnetwork"},
		{"im.", "im"},
		{"tasks.", "task"},
		{"task.", "task"},
		{"log.", "log"},
		{"crm.", "crm"},
		{"bizproc.", "bizproc"},
		{"userfieldconfig.", "userfieldconfig"},
		{"department.", "department"},
	}
	for _, p := range prefixes {
		if strings.HasPrefix(m, p.prefix) {
			return p.scope
		}
	}
	return ""
}
