package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/httplimit/httplimittest"
	"github.com/ingest-dev/ingest/internal/metrics"
)

// TestPushgatewayLimits: the gateway's answers are capped (its group listing, and an error
// body the push library reads whole) and its redirects followed only within its origin, whose
// URL may carry basic auth credentials.
func TestPushgatewayLimits(t *testing.T) {
	t.Parallel()
	other := &httplimittest.Recorder{}
	otherHost := httplimittest.Serve(t, httplimittest.OtherHost, other)
	bomb := gzipbomb.New([]byte(`{"status":"success","data":[`), 64<<30)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			http.Redirect(w, r, otherHost.URL+strings.TrimPrefix(r.URL.Path, "/moved"), http.StatusTemporaryRedirect)
		case r.URL.Path == "/api/v1/metrics", strings.HasPrefix(r.URL.Path, "/failing/"):
			if strings.HasPrefix(r.URL.Path, "/failing/") {
				w.Header().Set("Content-Encoding", "gzip")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = bomb.WriteTo(w)
				return
			}
			bomb.Serve(w)
		}
	}))
	defer gw.Close()
	auth := strings.Replace(gw.URL, "http://", "http://pusher:s3cret@", 1)

	m := metrics.New()
	m.Finish(true)
	err := m.Push(context.Background(), auth+"/moved", "extract habr")
	var re *httplimit.RedirectError
	if !errors.As(err, &re) || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "another origin") {
		t.Errorf("push to a gateway redirecting elsewhere: %v", err)
	}
	// The push library quotes an error answer whole, and ignores a failed read: what it quotes
	// is the cap's worth.
	if err := m.Push(context.Background(), gw.URL+"/failing", "extract habr"); err == nil || len(err.Error()) > 5<<10 {
		t.Errorf("push answered with a bomb: an error of %d bytes, want one quoting at most 4 KiB", len(fmt.Sprint(err)))
	}
	err = metrics.DeleteStaleShards(context.Background(), auth, "social_sync_run", 2)
	if !errors.Is(err, httplimit.ErrTooLarge) || !strings.Contains(err.Error(), "answer larger than 67108864 bytes") {
		t.Errorf("group listing answered with a bomb: %v", err)
	}
	if got := other.Requests(); len(got) != 0 {
		t.Errorf("the other origin got %d requests: %q", len(got), got)
	}
}
