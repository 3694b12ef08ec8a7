package rest

import (
	"sync/atomic"
	"time"
)

// Stats counts what a client did, for benchmarks and metrics.
type Stats struct {
	// Requests is the number of HTTP requests sent, retries and redirect
	// hops included.
	Requests int64
	// QueryLimit is the number of 503 QUERY_LIMIT_EXCEEDED answers.
	QueryLimit int64
	// OperationLimit is the number of 429 OPERATION_TIME_LIMIT answers,
	// including those for single commands inside a batch.
	OperationLimit int64
	// ServerErrors is the number of 5xx answers, non-JSON bodies, timeouts
	// and broken connections.
	ServerErrors int64
	// Retries is the number of requests repeated after a failure.
	Retries int64
	// Redirects is the number of redirects within the webhook's origin
	// followed (one off it fails the call).
	Redirects int64
	// Paused is the total time calls waited for a method's operating-time
	// window to free up.
	Paused time.Duration
}

type counters struct {
	requests, queryLimit, operationLimit, serverErrors, retries, redirects atomic.Int64
	paused                                                                 atomic.Int64 // nanoseconds
}

func (c *counters) snapshot() Stats {
	return Stats{
		Requests:       c.requests.Load(),
		QueryLimit:     c.queryLimit.Load(),
		OperationLimit: c.operationLimit.Load(),
		ServerErrors:   c.serverErrors.Load(),
		Retries:        c.retries.Load(),
		Redirects:      c.redirects.Load(),
		Paused:         time.Duration(c.paused.Load()),
	}
}
