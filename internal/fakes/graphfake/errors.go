package graphfake

import (
	"encoding/json"
	"fmt"
	"net/http"

	embedded "github.com/ingest-dev/ingest/internal/fakes/fixtures"
)

// apiError is an answer in the Graph API's error envelope.
type apiError struct {
	status int
	body   json.RawMessage
}

func errBadRequest(code, subcode int, msg string) *apiError {
	return errWith(http.StatusBadRequest, code, subcode, msg, false)
}

func errWith(status, code, subcode int, msg string, transient bool) *apiError {
	e := obj{{"message", msg}, {"type", "OAuthException"}, {"code", code}}
	if subcode != 0 {
		e.add("error_subcode", subcode)
	}
	if transient {
		e.add("is_transient", true)
	}
	e.add("fbtrace_id", "AfakeTrace0"+fmt.Sprint(code))
	b, _ := json.Marshal(obj{{"error", e}})
	return &apiError{status: status, body: b}
}

// sample returns a verbatim answer from the fixtures (internal/fakes/fixtures/social).
func sample(name string) json.RawMessage {
	return embedded.ReadFile("social/" + name)
}

// throttleBody is one throttling answer; platform says it is a Platform Rate Limits code
// (business discovery) rather than a Business Use Case one (connected accounts).
type throttleBody struct {
	code     int
	platform bool
	body     func() json.RawMessage
}

// throttleBodies are the throttling answers the fake rotates through, all with HTTP 400: the
// real bodies where the fixtures have them.
var throttleBodies = []throttleBody{
	{80002, false, func() json.RawMessage { return sample("airbyte_test_ig_rate_limit_error_code80002.json") }},
	{4, true, func() json.RawMessage { return sample("airbyte_test_app_rate_limit_error_code4.json") }},
	{17, true, func() json.RawMessage { return errBadRequest(17, 0, "(#17) User request limit reached").body }},
	{32, true, func() json.RawMessage { return sample("metadocs_rate_limit_error_code32.json") }},
	{613, true, func() json.RawMessage {
		return errBadRequest(613, 0, "(#613) Calls to this api have exceeded the rate limit.").body
	}},
	{80001, false, func() json.RawMessage { return sample("metadocs_buc_rate_limit_error_code80001.json") }},
}

func errNoObject(id string) *apiError {
	return errBadRequest(100, 33, fmt.Sprintf("Unsupported get request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api", id))
}

var (
	errTokenExpired = errBadRequest(190, 463, "Error validating access token: Session has expired on Tuesday, 24-Nov-26 12:00:00 PST. The current time is Tuesday, 24-Nov-26 13:00:00 PST.")
	errTokenInvalid = errBadRequest(190, 0, "Invalid OAuth access token - Cannot parse access token")
)

func errUserNotFound(username string) *apiError {
	b, _ := json.Marshal(obj{{"error", obj{{"message", "Invalid user id"}, {"type", "OAuthException"}, {"code", 110},
		{"error_subcode", 2207013}, {"is_transient", false}, {"error_user_title", "Cannot find User"},
		{"error_user_msg", "The user with username: " + username + " cannot be found."}, {"fbtrace_id", "AfakeTrace110"}}}})
	return &apiError{status: http.StatusBadRequest, body: b}
}
