// Package httplimittest helps the clients' tests check the limits of package httplimit against
// real HTTP servers: a second origin that records whatever reaches it, servers on hosts of
// their own, and the memory a call allocated.
package httplimittest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// OtherHost is a loopback address other than 127.0.0.1: a server there is another origin by
// its host, not only by its port (Linux routes all of 127.0.0.0/8 to the loopback).
const OtherHost = "127.0.0.2"

// Serve starts h on host (a free port) and closes it when the test ends. A host it cannot
// listen on skips the test.
func Serve(t testing.TB, host string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// Recorder is a server's handler that keeps every request it gets and answers 200 with an
// empty JSON object.
type Recorder struct {
	mu   sync.Mutex
	reqs []string
}

// ServeHTTP records the request: its method, URL, Authorization header and body.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, strings.Join([]string{req.Method, req.URL.String(), req.Header.Get("Authorization"), string(body)}, " "))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}

// Requests returns what reached the server so far, one line each.
func (r *Recorder) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

// Allocated returns the bytes the process allocated while f ran: a bound on it is a bound on
// what f read into memory.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
