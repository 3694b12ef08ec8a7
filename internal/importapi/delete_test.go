package importapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
)

func TestClientDeletesByKeyWithChildren(t *testing.T) {
	ctx := context.Background()
	fake, c, _ := startTarget(t, Options{})
	posts, err := c.Import(ctx, "feed", []Item{{Key: "source:feed:1", Checksum: "a", Payload: json.RawMessage(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Import(ctx, "feed_recipients", []Item{{Key: "source:feed_recipients:1:UA", Checksum: "a",
		Payload: json.RawMessage(`{"post_id":"` + posts[0].TargetID + `","type":"all_users","group_id":null,"user_id":null}`)}}); err != nil {
		t.Fatal(err)
	}

	fake.FailItems("feed", 1)
	res, err := c.Delete(ctx, "feed", []string{"source:feed:1", "source:feed:2"})
	if err != nil {
		t.Fatal(err)
	}
	if e := res[0].Error; e == nil || e.Code != "temporarily_unavailable" || !e.Retryable || res[1].Status != StatusNotFound {
		t.Errorf("delete with a busy target: %+v; want the first retryable, the second not_found", res)
	}
	res, err = c.Delete(ctx, "feed", []string{"source:feed:1"})
	if err != nil || res[0].Status != StatusDeleted || res[0].Children != 1 {
		t.Errorf("delete again: %+v, %v; want deleted with its one recipient", res, err)
	}
	if n, err := c.Count(ctx, "feed_recipients"); err != nil || n != 0 {
		t.Errorf("recipients after their post's delete: %d, %v", n, err)
	}
	res, err = c.Delete(ctx, "feed", []string{"source:feed:1"})
	if err != nil || res[0].Status != StatusNotFound {
		t.Errorf("a delete whose answer was lost, sent again: %+v, %v; want not_found", res, err)
	}

	fake.FailNext("import.feed.delete", targetfake.FaultServerError, 1)
	if _, err := c.Delete(ctx, "feed", []string{"source:feed:1"}); !IsRetryable(err) {
		t.Errorf("a 503: %v, want a retryable *Error", err)
	}
	if _, err := c.Delete(ctx, "feed", nil); err == nil {
		t.Error("Delete without keys was sent")
	}
}

func TestClientRefusesMalformedDeleteAnswers(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct{ name, answer, want string }{
		{"too few results", `{"results":[]}`, "0 results for 2 keys"},
		{"another key", `{"results":[{"key":"source:feed:2","status":"deleted"},{"key":"source:feed:1","status":"deleted"}]}`, `is for key "source:feed:2"`},
		{"no status", `{"results":[{"key":"source:feed:1"},{"key":"source:feed:2","status":"deleted"}]}`, `has status "" and no error`},
		{"unknown status", `{"results":[{"key":"source:feed:1","status":"gone"},{"key":"source:feed:2","status":"deleted"}]}`, `has status "gone"`},
		{"error without code", `{"results":[{"key":"source:feed:1","error":{}},{"key":"source:feed:2","status":"deleted"}]}`, "without a code"},
		{"negative children", `{"results":[{"key":"source:feed:1","status":"deleted","children":-1},{"key":"source:feed:2","status":"not_found"}]}`, "-1 children"},
		{"not JSON", `<html>ok</html>`, "does not decode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/import.feed.delete") {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.answer))
			}))
			defer srv.Close()
			c, err := New(strings.Replace(srv.URL, "http://", "http://import:secret0token@", 1)+"/api/", Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Delete(ctx, "feed", []string{"source:feed:1", "source:feed:2"})
			te, ok := errors.AsType[*Error](err)
			if !ok || te.HTTPStatus != 200 || IsRetryable(err) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "secret0token") {
				t.Errorf("Delete = %v; want a final *Error saying %q", err, tt.want)
			}
		})
	}
}
