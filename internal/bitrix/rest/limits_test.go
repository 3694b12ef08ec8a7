package rest_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/httplimit/httplimittest"
)

// TestGzipBombFailsTheCallOnce: a 64 GiB bomb (64 MB on the wire) fails its call with the cap
// in the message, is not asked again (the portal would send the same), and costs the client the
// cap, not the inflated size.
func TestGzipBombFailsTheCallOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int64 // 0: the default
	}{
		{"small cap", 1 << 20},
		{"default cap", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Reading the default cap (64 MiB inflated) under the race detector on a busy machine
			// took over the request's default 70 s (372 s at load 40): the test is about the
			// cap, so the request has all the time go test's -timeout leaves it.
			e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{MaxAnswerBytes: tc.limit, Timeout: time.Hour})
			bomb := e.portal.ServeGzipBombs("user.get", 64<<30)
			limit := tc.limit
			if limit == 0 {
				limit = rest.DefaultMaxAnswerBytes
			}
			var err error
			alloc := httplimittest.Allocated(func() { _, err = e.client.Call(t.Context(), "user.get", nil) })
			if !errors.Is(err, httplimit.ErrTooLarge) || !rest.IsPermanent(err) {
				t.Fatalf("err %v, want a permanent ErrTooLarge", err)
			}
			msg := err.Error()
			for _, want := range []string{"bitrix user.get", "user.get.json", "answer larger than " + strconv.FormatInt(limit, 10) + " bytes"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, e.portal.Token()) {
				t.Errorf("error %q contains the token", msg)
			}
			if n := e.portal.Stats().Requests; n != 1 {
				t.Errorf("portal asked %d times, want once", n)
			}
			// Reading stops one byte past the cap: the buffer doubles up to it (1.5 times the cap
			// at most at once), plus the decompressor's window and the connection's buffers.
			if bound := uint64(3*limit + 8<<20); alloc > bound {
				t.Errorf("allocated %d bytes for a cap of %d (bound %d)", alloc, limit, bound)
			}
			// What the server got to send: the cap's share of the bomb plus what the sockets buffer.
			if bomb.Written() > bomb.Compressed()/4 {
				t.Errorf("the client took %d of the bomb's %d bytes", bomb.Written(), bomb.Compressed())
			}
		})
	}
}

// TestRedirectOffTheOriginIsRefused: a portal address answering with a redirect to another
// origin (another host, another port, https to http) fails the call naming where it pointed,
// without the token, and nothing reaches the other origin.
func TestRedirectOffTheOriginIsRefused(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{})
	other := &httplimittest.Recorder{}
	otherHost := httplimittest.Serve(t, httplimittest.OtherHost, other)
	otherPort := httplimittest.Serve(t, "127.0.0.1", other)
	for _, tc := range []struct {
		name   string
		to     string
		reason string
		tls    bool
	}{
		{"another host", otherHost.URL, "another origin than http://127.0.0.1:", false},
		{"another port", otherPort.URL, "another origin", false},
		{"https to http", otherPort.URL, "leaves https for plain http", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moved := bitrixfake.MovedTo(tc.to)
			var old *httptest.Server
			opts := rest.Options{}
			if tc.tls {
				old = httptest.NewTLSServer(moved)
				opts.HTTPClient = old.Client()
			} else {
				old = httptest.NewServer(moved)
			}
			defer old.Close()
			c := e.newClient(t, old.URL+e.portal.WebhookPath(), opts)
			_, err := c.Call(t.Context(), "user.get", map[string]any{"start": 0})
			re, ok := errors.AsType[*httplimit.RedirectError](err)
			if !ok || !rest.IsPermanent(err) {
				t.Fatalf("err %v, want a permanent RedirectError", err)
			}
			msg := err.Error()
			for _, want := range []string{"bitrix user.get", "HTTP 302", tc.to + "/rest/1/xxxxx/user.get.json", tc.reason} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if hint := strings.Contains(msg, "set BITRIX_WEBHOOK_URL to it"); hint == tc.tls {
				t.Errorf("error %q: a hint to update BITRIX_WEBHOOK_URL %v, want %v (never to plain http)", msg, hint, !tc.tls)
			}
			if strings.Contains(msg, e.portal.Token()) || re.Status != http.StatusFound {
				t.Errorf("error %q (status %d)", msg, re.Status)
			}
		})
	}
	if got := other.Requests(); len(got) != 0 {
		t.Errorf("the other origin got %d requests: %q", len(got), got)
	}
}

// TestRedirectWithinTheOriginIsFollowed: a redirect that stays on the webhook's origin is
// followed with the POST and its parameters, for that request only.
func TestRedirectWithinTheOriginIsFollowed(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 120, Seed: 1}, rest.Options{})
	var redirected int
	var mu sync.Mutex
	srv := httplimittest.Serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/old"); ok {
			mu.Lock()
			redirected++
			mu.Unlock()
			http.Redirect(w, r, rest, http.StatusMovedPermanently)
			return
		}
		e.portal.ServeHTTP(w, r)
	}))
	c := e.newClient(t, srv.URL+"/old"+e.portal.WebhookPath(), rest.Options{})
	params := map[string]any{"FILTER": map[string]any{">ID": 100}, "start": -1}
	for i := range 2 {
		resp, err := c.Call(t.Context(), "user.get", params)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		var rows []struct{ ID rest.ID }
		if err := resp.Decode(&rows); err != nil || len(rows) == 0 || rows[0].ID != "101" {
			t.Fatalf("call %d: rows %v (%v); the parameters were lost", i+1, rows, err)
		}
		if last := e.portal.LastRequest(); last.Verb != http.MethodPost {
			t.Errorf("call %d reached the portal as %s", i+1, last.Verb)
		}
	}
	if s := c.Stats(); s.Redirects != 2 || redirected != 2 {
		t.Errorf("stats %+v, %d redirects served; want each call redirected", s, redirected)
	}
	if strings.Contains(e.logs.String(), e.portal.Token()) || !strings.Contains(e.logs.String(), "redirected the request within its address") {
		t.Errorf("logs:\n%s", e.logs)
	}
}

// TestGzipBombsInFlightAreReadThroughTheGate: calls in flight all served bombs each fail on
// their own, and the read gate hands its slots back (a leaked slot would hang the later ones).
func TestGzipBombsInFlightAreReadThroughTheGate(t *testing.T) {
	const limit = 1 << 20
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{})
	e.portal.ServeGzipBombs("user.get", 1<<30)
	c := e.newClient(t, e.server.URL+e.portal.WebhookPath(), rest.Options{MaxAnswerBytes: limit, ReadGate: httplimit.NewGate(2, 64<<10)})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			_, err := c.Call(t.Context(), "user.get", nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, httplimit.ErrTooLarge) {
			t.Errorf("err %v, want ErrTooLarge", err)
		}
	}
}

// TestBatchTooLargeIsSentInParts: a read-only batch whose answer passes the cap is sent again
// in halves; every command gets the result it gets uncapped, and a command whose own answer
// is too large fails alone, naming itself and the cap, while the others are answered.
func TestBatchTooLargeIsSentInParts(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 200, Seed: 1}, rest.Options{})
	page := func(key string, start int) rest.Command {
		return rest.Command{Key: key, Method: "user.get", Params: map[string]any{"start": start, "sort": "ID", "order": "ASC"}}
	}
	one := func(key string, id int) rest.Command {
		return rest.Command{Key: key, Method: "user.get", Params: map[string]any{"FILTER": map[string]any{"ID": id}}}
	}
	pages := []rest.Command{page("p0", 0), page("p1", 50), page("p2", 100), page("p3", 150)}
	want, err := e.client.Batch(t.Context(), pages, false)
	if err != nil {
		t.Fatal(err)
	}
	size := len(want.Results["p0"])
	if size < 1000 {
		t.Fatalf("a page of 50 users is %d bytes: the fake is not serving pages", size)
	}

	// Four pages pass the cap, two fit under it.
	capped := e.newClient(t, e.server.URL+e.portal.WebhookPath(), rest.Options{MaxAnswerBytes: int64(size) * 5 / 2})
	before := e.portal.Stats().Requests
	got, err := capped.Batch(t.Context(), pages, false)
	if err != nil {
		t.Fatalf("capped batch: %v", err)
	}
	if n := e.portal.Stats().Requests - before; n != 3 {
		t.Errorf("portal asked %d times, want 3 (the whole batch, then its two halves)", n)
	}
	for _, c := range pages {
		r, err := got.Response(c.Key)
		if err != nil {
			t.Fatalf("%s: %v", c.Key, err)
		}
		if string(r.Result) != string(want.Results[c.Key]) {
			t.Errorf("%s: result differs from the uncapped batch's", c.Key)
		}
		if r.Next == nil && c.Key != "p3" {
			t.Errorf("%s: next lost in the split", c.Key)
		}
	}
	if !strings.Contains(e.logs.String(), "bitrix batch answer too large, sending it again in two halves") {
		t.Errorf("the split is not logged:\n%s", e.logs)
	}

	// One command too large on its own fails alone; the small ones are answered.
	tight := e.newClient(t, e.server.URL+e.portal.WebhookPath(), rest.Options{MaxAnswerBytes: int64(size) / 2})
	mixed := []rest.Command{one("u1", 1), page("big", 0), one("u2", 2), one("u3", 3)}
	got, err = tight.Batch(t.Context(), mixed, false)
	if err != nil {
		t.Fatalf("tight batch: %v", err)
	}
	if _, err := got.Response("big"); !errors.Is(err, httplimit.ErrTooLarge) || !strings.Contains(err.Error(), "bitrix batch command big (user.get)") {
		t.Errorf("big: %v, want its own ErrTooLarge naming it", err)
	}
	for _, k := range []string{"u1", "u2", "u3"} {
		if r, err := got.Response(k); err != nil || !strings.Contains(string(r.Result), `"ID"`) {
			t.Errorf("%s: %v, want its user", k, err)
		}
	}

	// A write batch is never sent twice, nor one whose commands chain.
	for name, cmds := range map[string][]rest.Command{
		"write":   {{Key: "w", Method: "user.update", Params: map[string]any{"ID": 1}}, page("p0", 0), page("p1", 50), page("p2", 100)},
		"chained": {page("p0", 0), {Key: "n", Method: "user.get", Params: map[string]any{"start": rest.Ref("p0", "next")}}, page("p2", 100), page("p3", 150)},
	} {
		before := e.portal.Stats().Requests
		if _, err := capped.Batch(t.Context(), cmds, false); !errors.Is(err, httplimit.ErrTooLarge) {
			t.Errorf("%s: err %v, want ErrTooLarge", name, err)
		}
		if n := e.portal.Stats().Requests - before; n != 1 {
			t.Errorf("%s: portal asked %d times, want once", name, n)
		}
	}
}

// TestSettleDoesNotResendATooLargeCommand: Settle sends again the commands an answer left
// without a result, but not one whose own answer passed the cap (the portal would send it again).
func TestSettleDoesNotResendATooLargeCommand(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 60, Seed: 1}, rest.Options{})
	full, err := e.client.Call(t.Context(), "user.get", map[string]any{"start": 0})
	if err != nil {
		t.Fatal(err)
	}
	tight := e.newClient(t, e.server.URL+e.portal.WebhookPath(), rest.Options{MaxAnswerBytes: int64(len(full.Result)) / 2})
	cmds := []rest.Command{
		{Key: "big", Method: "user.get", Params: map[string]any{"start": 0}},
		{Key: "small", Method: "user.get", Params: map[string]any{"FILTER": map[string]any{"ID": 1}}},
	}
	before := e.portal.Stats().Requests
	res, err := rest.Settle(t.Context(), tight.Batch, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Response("big"); !errors.Is(err, httplimit.ErrTooLarge) {
		t.Errorf("big: %v, want ErrTooLarge", err)
	}
	if _, err := res.Response("small"); err != nil {
		t.Errorf("small: %v", err)
	}
	if n := e.portal.Stats().Requests - before; n != 3 {
		t.Errorf("portal asked %d times, want 3 (the batch, then each half once)", n)
	}
}

// TestBatchBombIsNotSplitOn: when both halves of a batch are still over the cap (a gzip bomb
// answers every request alike), splitting stops there: three requests for a batch of any size,
// every command failing with the cap, instead of one request per command.
func TestBatchBombIsNotSplitOn(t *testing.T) {
	e := newEnv(t, bitrixfake.Options{Users: 5, Seed: 1}, rest.Options{MaxAnswerBytes: 1 << 20})
	e.portal.ServeGzipBombs("batch", 64<<20)
	var cmds []rest.Command
	for i := range rest.MaxBatch {
		cmds = append(cmds, rest.Command{Key: "u" + strconv.Itoa(i), Method: "user.get", Params: map[string]any{"FILTER": map[string]any{"ID": i + 1}}})
	}
	res, err := e.client.Batch(t.Context(), cmds, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.portal.Stats().Requests; n != 3 {
		t.Errorf("portal asked %d times, want 3", n)
	}
	for _, c := range cmds {
		if _, err := res.Response(c.Key); !errors.Is(err, httplimit.ErrTooLarge) {
			t.Fatalf("%s: %v, want ErrTooLarge", c.Key, err)
		}
	}
}
