// Package targetfake is an in-memory target system implementing the
// import API of docs/target-import-api.md over real HTTP, for tests and
// the demo. Besides the API it offers what tests need: counters (including
// duplicates, which must stay 0), faults on demand, and ways to corrupt or
// delete stored records so that verification has something to catch.
package targetfake

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Token is the bearer token the server accepts; empty means
	// "fake0target0token".
	Token string
	// MaxItems is the most items one batch or get may carry; 0 means 100.
	MaxItems int
	// SlowDelay is how long FaultSlow holds an answer; 0 means 2 s.
	SlowDelay time.Duration
	// Latency holds every answer back, outside the server's lock, as a
	// real API's network and work do (concurrent requests overlap it).
	Latency time.Duration
	// MethodLatency replaces Latency for the methods it names ("import.deals.delete"): a test
	// can hold back the one call a kill must land in without slowing every other.
	MethodLatency map[string]time.Duration
	// Now stamps updated_at; nil means time.Now.
	Now func() time.Time
	// StableIDs derives a new record's target id from its key instead of counting: the same
	// key gets the same id whichever order records arrive in, so that two targets filled by
	// runs that sent batches in different orders (one killed and rerun, one not) can be
	// compared byte for byte, references included. The API promises neither.
	StableIDs bool
}

// Fault is a failure the server can be told to serve.
type Fault int

const (
	// FaultServerError answers 503 with an HTML page; nothing is stored.
	FaultServerError Fault = iota + 1
	// FaultSlow holds the answer for Options.SlowDelay, then answers
	// normally (a client that gave up never sees it, though it applied).
	FaultSlow
	// FaultDrop closes the connection before doing anything.
	FaultDrop
	// FaultLostAnswer applies the request, then closes the connection
	// instead of answering: the client cannot know what was stored.
	FaultLostAnswer
	// FaultRateLimited answers 429 rate_limited with Retry-After: 1, as
	// the API does when a client sends too fast; nothing is stored.
	FaultRateLimited
)

// Server is the fake target; it is an http.Handler.
type Server struct {
	opts Options

	mu         sync.Mutex
	entities   map[string]*entity
	stats      Stats
	faults     map[string][]Fault           // by method name, "" for any
	failing    map[string]int               // entity -> items still to fail
	rejected   map[string]map[string]string // entity -> key -> message
	nextOption int                          // the last enumeration option id given out
}

// New returns an empty target.
func New(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = "fake0target0token"
	}
	if opts.MaxItems <= 0 {
		opts.MaxItems = 100
	}
	if opts.SlowDelay <= 0 {
		opts.SlowDelay = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{
		opts:     opts,
		entities: map[string]*entity{},
		faults:   map[string][]Fault{},
		failing:  map[string]int{},
		rejected: map[string]map[string]string{},
	}
}

// Token returns the bearer token, so tests can check it never leaks.
func (s *Server) Token() string { return s.opts.Token }

var methodPattern = regexp.MustCompile(`^import\.([a-z][a-z0-9_]*)\.(batch|delete|count|get|list|fields|fields\.add)$`)

// apiError is a request-level failure.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func badRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf(format, args...)}
}

// ServeHTTP answers one API call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := path.Base(r.URL.Path)
	s.mu.Lock()
	s.stats.Requests++
	fault := s.takeFault(method)
	s.mu.Unlock()

	switch fault {
	case FaultServerError:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>\n")
		return
	case FaultDrop:
		dropConnection(w)
		return
	case FaultRateLimited:
		s.mu.Lock()
		s.stats.RateLimited++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
			"code": "rate_limited", "message": "too many requests; retry after 1 s"}})
		return
	case FaultSlow:
		t := time.NewTimer(s.opts.SlowDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
	}

	answer, err := s.handle(r, method)
	latency, ok := s.opts.MethodLatency[method]
	if !ok {
		latency = s.opts.Latency
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	if fault == FaultLostAnswer {
		dropConnection(w)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{http.StatusInternalServerError, "internal", err.Error()}
		}
		w.WriteHeader(ae.status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": ae.code, "message": ae.message}})
		return
	}
	_ = json.NewEncoder(w).Encode(answer)
}

func (s *Server) handle(r *http.Request, method string) (any, error) {
	if r.Method != http.MethodPost {
		return nil, &apiError{http.StatusMethodNotAllowed, "bad_request", "use POST"}
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.Token)) != 1 {
		return nil, &apiError{http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token"}
	}
	m := methodPattern.FindStringSubmatch(method)
	if m == nil {
		return nil, &apiError{http.StatusNotFound, "unknown_method", fmt.Sprintf("no method %q", method)}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return nil, badRequest("read body: %v", err)
	}
	entityName, op := m[1], m[2]

	s.mu.Lock()
	defer s.mu.Unlock()
	switch op {
	case "batch":
		return s.batch(entityName, body)
	case "delete":
		return s.deleteKeys(entityName, body)
	case "count":
		return map[string]int{"count": len(s.entity(entityName).records)}, nil
	case "get":
		return s.get(entityName, body)
	case "list":
		return s.list(entityName, body)
	case "fields":
		return map[string]any{"fields": s.entity(entityName).fieldList()}, nil
	default: // fields.add
		return s.addFields(entityName, body)
	}
}

func (s *Server) takeFault(method string) Fault {
	for _, key := range []string{method, ""} {
		if q := s.faults[key]; len(q) > 0 {
			s.faults[key] = q[1:]
			return q[0]
		}
	}
	return 0
}

func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tcp, ok := conn.(*net.TCPConn); ok {
				_ = tcp.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// FailNext makes the next n requests for the method (like
// "import.users.batch"; "" for any) fail with f.
func (s *Server) FailNext(method string, f Fault, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], f)
	}
}

// FailItems makes the next n items or keys of the entity (batch or delete)
// fail with the retryable error temporarily_unavailable; nothing changes
// for them.
func (s *Server) FailItems(entity string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[entity] += n
}

// RejectKey makes every import or delete of the key fail with the
// permanent error rejected and the message.
func (s *Server) RejectKey(entity, key, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rejected[entity] == nil {
		s.rejected[entity] = map[string]string{}
	}
	s.rejected[entity][key] = message
}
