package importapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRefusedTokenIsSaidPlainly: a 401 or 403 says first that the target refused the token,
// whether the answer is the JSON envelope (the fake's) or a proxy's page that is not JSON.
func TestRefusedTokenIsSaidPlainly(t *testing.T) {
	_, c, token := startTarget(t, Options{})
	bad, err := New(strings.Replace(c.Address(), "http://", "http://import:wrong0token@", 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Count(context.Background(), "users")
	want := "target import.users.count: the target refused the token (HTTP 401 Unauthorized): check the token in TARGET_WEBHOOK_URL (the target said: unauthorized: missing or wrong bearer token)"
	if err == nil || err.Error() != want {
		t.Errorf("wrong token against the fake:\n got %v\nwant %s", err, want)
	}

	// A proxy in front of the target that refuses with a page of its own, labelled JSON.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("<html>403 Forbidden</html>"))
	}))
	t.Cleanup(proxy.Close)
	behind, err := New(strings.Replace(proxy.URL, "http://", "http://import:"+token+"@", 1)+"/api/v1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = behind.Count(context.Background(), "users")
	want = "target import.users.count: the target refused the token (HTTP 403 Forbidden): the token in TARGET_WEBHOOK_URL may not call this method"
	if err == nil || err.Error() != want || IsRetryable(err) {
		t.Errorf("403 page that is not JSON:\n got %v\nwant %s, not retryable", err, want)
	}

	for _, e := range []*Error{
		{Method: "import.users.batch", HTTPStatus: 500, Message: notJSON + " (text/html, 12 bytes)"},
		{Method: "import.users.batch", HTTPStatus: 400, Code: "bad_request", Message: "no items"},
	} {
		if strings.Contains(e.Error(), "refused the token") {
			t.Errorf("HTTP %d reads as a refused token: %s", e.HTTPStatus, e)
		}
	}
}
