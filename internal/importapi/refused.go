package importapi

import (
	"fmt"
	"net/http"
	"strings"
)

// notJSON starts the message of an error answer whose body is not the JSON error envelope.
const notJSON = "answer is not JSON"

// refusedToken reports an answer that refuses the credentials rather than the request: 401
// (the token is wrong or missing) or 403 (the token may not call this method).
func (e *Error) refusedToken() bool {
	return e.HTTPStatus == http.StatusUnauthorized || e.HTTPStatus == http.StatusForbidden
}

// refusal says a refused token plainly, first, with what to do; what the target said follows
// when it said something (a body that is not JSON, e.g. a proxy's HTML page, says nothing).
func (e *Error) refusal() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target %s: the target refused the token (HTTP %d %s): ", e.Method, e.HTTPStatus, http.StatusText(e.HTTPStatus))
	if e.HTTPStatus == http.StatusUnauthorized {
		b.WriteString("check the token in TARGET_WEBHOOK_URL")
	} else {
		b.WriteString("the token in TARGET_WEBHOOK_URL may not call this method")
	}
	var said []string
	if e.Code != "" {
		said = append(said, e.Code)
	}
	if e.Message != "" && !strings.HasPrefix(e.Message, notJSON) {
		said = append(said, e.Message)
	}
	if len(said) > 0 {
		fmt.Fprintf(&b, " (the target said: %s)", strings.Join(said, ": "))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}
