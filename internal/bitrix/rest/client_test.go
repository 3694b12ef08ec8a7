package rest_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/retry"
)

// env is a fake portal on a real HTTP server and a client for it. Waits
// go through a manual clock shared by both, so tests take no real time,
// and everything the client logs is kept to check for the token.
type env struct {
	portal *bitrixfake.Portal
	server *httptest.Server
	clock  *bitrixfake.Clock
	client *rest.Client
	logs   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var t0 = time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)

func newEnv(t *testing.T, popts bitrixfake.Options, copts rest.Options) *env {
	t.Helper()
	e := &env{clock: bitrixfake.NewClock(t0), logs: &syncBuffer{}}
	if popts.Now == nil {
		popts.Now = e.clock.Now
	}
	e.portal = bitrixfake.New(popts)
	e.server = httptest.NewServer(e.portal)
	t.Cleanup(e.server.Close)
	e.client = e.newClient(t, e.server.URL+e.portal.WebhookPath(), copts)
	t.Cleanup(func() {
		if strings.Contains(e.logs.String(), e.portal.Token()) {
			t.Errorf("the logs contain the webhook token:\n%s", e.logs)
		}
	})
	return e
}

func (e *env) newClient(t *testing.T, webhook string, opts rest.Options) *rest.Client {
	t.Helper()
	if opts.Limiter == nil {
		opts.Limiter = rate.NewLimiter(rate.Inf, 1)
	}
	if opts.Now == nil {
		opts.Now = e.clock.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = e.clock.Sleep
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	}
	c, err := rest.New(webhook, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCallDecodesTheEnvelope(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 120, Groups: 3, Seed: 1}, rest.Options{})
	resp, err := e.client.Call(t.Context(), "user.get", map[string]any{"start": 50})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Total == nil || *resp.Total != 120 || resp.Next == nil || *resp.Next != 100 {
		t.Errorf("total %v next %v, want 120 and 100", resp.Total, resp.Next)
	}
	var users []struct {
		ID         rest.ID
		ACTIVE     bool
		Department []int `json:"UF_DEPARTMENT"`
	}
	if err := resp.Decode(&users); err != nil {
		t.Fatal(err)
	}
	if len(users) != 50 || users[0].ID == "" || len(users[0].Department) == 0 {
		t.Errorf("decoded %d users, first %+v", len(users), users[0])
	}
	if _, err := time.Parse(time.RFC3339, resp.Time.DateStart); err != nil {
		t.Errorf("time.date_start %q: %v", resp.Time.DateStart, err)
	}

	last, err := e.client.Call(t.Context(), "user.get", map[string]any{"start": -1, "FILTER": map[string]any{">ID": 130}})
	if err != nil {
		t.Fatal(err)
	}
	// A page read with start=-1 counts nothing: no next, and a total of 0 at most (the sample of
	// performance/huge-data.md answers "total": 0; crm.item.productrow.list's page sends none).
	if (last.Total != nil && *last.Total != 0) || last.Next != nil {
		t.Errorf("start=-1: total %v next %v, want no count", last.Total, last.Next)
	}
}

// TestNumericIDs uses a server answering like crm.item.list, whose IDs are
// JSON numbers nested under "items".
func TestNumericIDs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"result":{"items":[{"id":253,"assignedById":1},{"id":"254","assignedById":"3"}]},"total":2,"time":{"start":1773925430,"operating":0}}`))
	}))
	defer srv.Close()
	c, err := rest.New(srv.URL+"/rest/1/tok/", rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Call(t.Context(), "crm.item.list", map[string]any{"entityTypeId": 2})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Items []struct {
			ID         rest.ID `json:"id"`
			AssignedBy rest.ID `json:"assignedById"`
		}
	}
	if err := resp.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 2 || out.Items[0].ID != "253" || out.Items[1].ID != "254" || out.Items[1].AssignedBy != "3" {
		t.Errorf("decoded %+v", out.Items)
	}
	rows, err := resp.Rows("items")
	if err != nil || len(rows) != 2 {
		t.Errorf("Rows(items) = %d rows, %v", len(rows), err)
	}
}

func TestPermanentErrorsNameTheMethodNotTheToken(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Groups: 2, Seed: 1, Scopes: []string{"user"}}, rest.Options{})
	wrongToken := e.newClient(t, e.server.URL+"/rest/1/wr0ngt0ken/", rest.Options{})
	tests := []struct {
		name       string
		client     *rest.Client
		method     string
		wantStatus int
		wantCode   string
		wantText   []string
	}{
		{"wrong token", wrongToken, "user.get", 401, rest.CodeNoAuthFound,
			[]string{"bitrix user.get", "Wrong authorization data", "BITRIX_WEBHOOK_URL"}},
		{"unknown method", e.client, "im.chat.message.list", 404, rest.CodeMethodNotFound,
			[]string{"bitrix im.chat.message.list", "Method not found!", "module is not installed"}},
		{"missing scope", e.client, "sonet_group.get", 403, rest.CodeInsufficientScope,
			[]string{"bitrix sonet_group.get", `lacks the "sonet" scope`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.client.Stats()
			_, err := tt.client.Call(t.Context(), tt.method, nil)
			var apiErr *rest.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatus != tt.wantStatus || apiErr.Code != tt.wantCode {
				t.Fatalf("err = %v, want HTTP %d %s", err, tt.wantStatus, tt.wantCode)
			}
			if !rest.IsPermanent(err) {
				t.Error("not classified permanent")
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
			for _, secret := range []string{e.portal.Token(), "wr0ngt0ken"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%q contains the token", err)
				}
			}
			if after := tt.client.Stats(); after.Retries != before.Retries || after.Requests != before.Requests+1 {
				t.Errorf("a permanent error was retried: %+v -> %+v", before, after)
			}
		})
	}
	if r := wrongToken.Redacted(); strings.Contains(r, "wr0ngt0ken") || !strings.HasSuffix(r, "/rest/1/***/") {
		t.Errorf("Redacted() = %s", r)
	}
}

func TestTransportErrorsDoNotLeakTheToken(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	webhook := srv.URL + "/rest/1/s3cr3tt0ken/"
	srv.Close() // nothing listens any more
	c, err := rest.New(webhook, rest.Options{
		Limiter: rate.NewLimiter(rate.Inf, 1),
		Retry:   retry.Policy{Delays: []time.Duration{0}},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(t.Context(), "user.get", nil)
	var terr *rest.TransportError
	if !errors.As(err, &terr) || strings.Contains(err.Error(), "s3cr3tt0ken") {
		t.Errorf("err = %v, want a TransportError without the token", err)
	}
	if s := c.Stats(); s.Requests != 2 || s.Retries != 1 {
		t.Errorf("stats %+v, want the read retried once", s)
	}
}

func TestReadsAreRetriedAfterServerFailures(t *testing.T) {
	tests := []struct {
		name  string
		fault bitrixfake.Fault
	}{
		{"502 with an HTML page", bitrixfake.FaultServerError},
		{"dropped connection", bitrixfake.FaultDrop},
		{"no answer in time", bitrixfake.FaultSlow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The slow fault holds its answer until the client leaves, so its timeout is certain;
			// the timeout is still long enough for the answer that follows on a busy machine.
			// The other faults answer at once and meet the default timeout.
			opts := rest.Options{}
			if tt.fault == bitrixfake.FaultSlow {
				opts.Timeout = 3 * time.Second
			}
			e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1, SlowDelay: time.Hour}, opts)
			e.portal.FailNext("user.get", tt.fault, 2)
			resp, err := e.client.Call(t.Context(), "user.get", nil)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if rows, _ := resp.Rows(); len(rows) != 5 {
				t.Errorf("%d rows after retries, want 5", len(rows))
			}
			if s := e.client.Stats(); s.Requests != 3 || s.Retries != 2 || s.ServerErrors != 2 {
				t.Errorf("stats %+v, want 3 requests, 2 retries, 2 server errors", s)
			}
		})
	}
}

func TestWritesAreNotRetriedAfterServerFailures(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{})
	e.portal.FailNext("user.userfield.add", bitrixfake.FaultServerError, 1)
	_, err := e.client.Call(t.Context(), "user.userfield.add", map[string]any{"fields": map[string]any{"FIELD_NAME": "X"}})
	var apiErr *rest.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatus != http.StatusBadGateway {
		t.Fatalf("err = %v, want the 502", err)
	}
	if s := e.client.Stats(); s.Requests != 1 || s.Retries != 0 {
		t.Errorf("stats %+v: a write that may have run was repeated", s)
	}
}

func TestQueryLimitIsRetriedOnceTheBucketHasRoom(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1, Rate: 2, Burst: 5},
		rest.Options{Rate: rest.Rate{PerSecond: 2, Burst: 5}, Retry: retry.Policy{Delays: []time.Duration{0, time.Second}}})
	for i := range 5 {
		if _, err := e.client.Call(t.Context(), "user.get", nil); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// The bucket is full: the 6th call is refused. The schedule's first
	// delay is 0 s, but the retry waits one drain interval (0.5 s at 2/s),
	// by which the portal has room again, so it is refused only once.
	before := e.clock.Now()
	if _, err := e.client.Call(t.Context(), "user.get", nil); err != nil {
		t.Fatalf("6th call: %v", err)
	}
	s := e.client.Stats()
	if s.QueryLimit != 1 || s.Retries != 1 || e.portal.Stats().QueryLimit != 1 {
		t.Errorf("client %+v, portal %+v; want 1 refusal, 1 retry", s, e.portal.Stats())
	}
	if waited := e.clock.Now().Sub(before); waited < 500*time.Millisecond {
		t.Errorf("retried after %v, want at least one drain interval (500ms)", waited)
	}
}

// TestQueryLimitIsWaitedOutUntilTheBucketCouldDrainTwice: refusals, at
// the first call as at any other, follow the schedule's delays (each at
// least one drain interval, the last one repeated) until the waits add up
// to twice a full bucket's draining, 5 s at 2/5; they do not use up the
// retries the schedule gives 5xx answers.
func TestQueryLimitIsWaitedOutUntilTheBucketCouldDrainTwice(t *testing.T) {
	opts := rest.Options{Rate: rest.Rate{PerSecond: 2, Burst: 5}, Retry: retry.Policy{Delays: []time.Duration{0, time.Second}}}
	// 0.5 s, 1 s, then 1 s until the sum reaches 5 s: six retries.
	const retries = 6
	t.Run("waited out", func(t *testing.T) {
		e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, opts)
		e.portal.FailNext("", bitrixfake.FaultQueryLimit, retries)
		before := e.clock.Now()
		if _, err := e.client.Call(t.Context(), "user.get", nil); err != nil {
			t.Fatalf("first call: %v", err)
		}
		if waited := e.clock.Now().Sub(before); waited != 5500*time.Millisecond {
			t.Errorf("waited %v, want 0.5 s + 5 x 1 s", waited)
		}
		if s := e.client.Stats(); s.Requests != retries+1 || s.QueryLimit != retries || s.Retries != retries {
			t.Errorf("stats %+v, want %d refusals, each retried", s, retries)
		}
	})
	t.Run("given up", func(t *testing.T) {
		e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, opts)
		e.portal.FailNext("", bitrixfake.FaultQueryLimit, retries+1)
		_, err := e.client.Call(t.Context(), "user.get", nil)
		if !rest.HasCode(err, rest.CodeQueryLimitExceeded) {
			t.Fatalf("err = %v, want QUERY_LIMIT_EXCEEDED once the budget is spent", err)
		}
		if s := e.client.Stats(); s.Requests != retries+1 {
			t.Errorf("stats %+v, want %d requests", s, retries+1)
		}
	})
	t.Run("apart from server errors", func(t *testing.T) {
		e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, opts)
		e.portal.FailNext("", bitrixfake.FaultQueryLimit, 3)
		e.portal.FailNext("", bitrixfake.FaultServerError, 1)
		e.portal.FailNext("", bitrixfake.FaultQueryLimit, 3)
		e.portal.FailNext("", bitrixfake.FaultServerError, 1)
		if _, err := e.client.Call(t.Context(), "user.get", nil); err != nil {
			t.Fatalf("call: %v", err)
		}
		if s := e.client.Stats(); s.QueryLimit != 6 || s.ServerErrors != 2 || s.Retries != 8 {
			t.Errorf("stats %+v, want 6 refusals and 2 server errors, each retried", s)
		}
		e.portal.FailNext("", bitrixfake.FaultServerError, 3)
		if _, err := e.client.Call(t.Context(), "user.get", nil); err == nil {
			t.Error("three server errors in a row passed a schedule of two retries")
		}
	})
}

// TestClientLimiterKeepsWithinTheBucket runs against the portal's real
// clock: the shared limiter must keep a burst of calls from ever being
// refused, and without it the same burst is.
func TestClientLimiterKeepsWithinTheBucket(t *testing.T) {
	portal := bitrixfake.New(bitrixfake.Options{Users: 3, Seed: 1, Rate: 20, Burst: 5})
	srv := httptest.NewServer(portal)
	defer srv.Close()
	quiet := slog.New(slog.DiscardHandler)
	fast := retry.Policy{Delays: []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}}

	limiter := rest.Rate{PerSecond: 20, Burst: 5}.NewLimiter()
	clients := make([]*rest.Client, 2) // two clients, one limiter: the process-wide setup
	for i := range clients {
		c, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: limiter, Logger: quiet, Retry: fast})
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	var wg sync.WaitGroup
	var failures atomic.Int64
	for _, c := range clients {
		wg.Go(func() {
			for range 15 {
				if _, err := c.Call(t.Context(), "user.get", nil); err != nil {
					failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failures.Load() != 0 || portal.Stats().QueryLimit != 0 || portal.Stats().Requests != 30 {
		t.Errorf("with the limiter: %d failures, portal %+v; want 30 requests and no 503", failures.Load(), portal.Stats())
	}

	unpaced, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{
		Limiter: rate.NewLimiter(rate.Inf, 1), Logger: quiet, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the bucket drain
	for range 30 {
		_, _ = unpaced.Call(t.Context(), "user.get", nil)
	}
	if unpaced.Stats().QueryLimit == 0 {
		t.Error("without the limiter no request was refused; the test proves nothing")
	}
}

func TestOperatingTimeIsWatchedBeforeTheLimit(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Groups: 2, Seed: 1,
		OperatingLimit: 300 * time.Second, CallCost: 120 * time.Second},
		rest.Options{OperatingLimit: 300 * time.Second, OperatingHeadroom: 60 * time.Second})
	for range 2 { // 120 s, then 240 s: at the headroom
		if _, err := e.client.Call(t.Context(), "user.get", nil); err != nil {
			t.Fatal(err)
		}
	}
	before := e.clock.Now()
	if _, err := e.client.Call(t.Context(), "sonet_group.get", nil); err != nil {
		t.Fatal(err)
	}
	if !e.clock.Now().Equal(before) {
		t.Error("another method waited for user.get's pause")
	}
	if _, err := e.client.Call(t.Context(), "user.get", nil); err != nil {
		t.Fatal(err)
	}
	reset := time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)
	if now := e.clock.Now(); now.Before(reset) {
		t.Errorf("user.get called again at %v, before the window reset at %v", now, reset)
	}
	if got := e.portal.Stats().OperationLimit; got != 0 {
		t.Errorf("portal refused %d calls, want none: the client pauses first", got)
	}
	if s := e.client.Stats(); s.Paused != reset.Sub(before) {
		t.Errorf("paused %v, want %v", s.Paused, reset.Sub(before))
	}
}

func TestOperationTimeLimitPausesTheMethod(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1,
		OperatingLimit: 300 * time.Second, CallCost: 120 * time.Second},
		rest.Options{OperatingLimit: time.Hour}) // the client misjudges the limit
	for i := range 4 {
		if _, err := e.client.Call(t.Context(), "user.get", nil); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	cs, ps := e.client.Stats(), e.portal.Stats()
	if cs.OperationLimit != 1 || ps.OperationLimit != 1 || ps.Calls["user.get"] != 4 {
		t.Errorf("client %+v, portal %+v; want one 429 sat out and 4 calls run", cs, ps)
	}
	if reset := time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC); e.clock.Now().Before(reset) {
		t.Errorf("retried at %v, before operating_reset_at %v", e.clock.Now(), reset)
	}
}

func TestCallStopsWhenTheContextEnds(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1, SlowDelay: time.Hour}, rest.Options{})
	e.portal.FailNext("user.get", bitrixfake.FaultSlow, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := e.client.Call(ctx, "user.get", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
	if s := e.client.Stats(); s.Retries != 0 {
		t.Errorf("retried %d times after the caller gave up", s.Retries)
	}
}
