package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/retry"
)

// DefaultBaseURL is the Graph API host with the version this client was written against.
const DefaultBaseURL = "https://graph.facebook.com/v23.0"

// maxBody caps a response: a page of 100 media with expanded carousels is well under 1 MB.
const maxBody = 16 << 20

// Options configure a Client.
type Options struct {
	// BaseURL is the Graph API root including its version, e.g. DefaultBaseURL or a fake's.
	BaseURL string
	// UserAgent names the tool.
	UserAgent string
	// Timeout bounds one request (default 30 s).
	Timeout time.Duration
	// Retry is the in-process schedule for transport failures and retryable answers; a
	// failure that outlasts it is the caller's to schedule. Zero value: 1 s, 4 s plus jitter.
	Retry *retry.Policy
	// OnRetry, when set, hears about each in-process retry.
	OnRetry func(endpoint string, attempt int, err error, wait time.Duration)
}

// Client sends GET requests to the Graph API. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	userAgent string
	http      *http.Client
	retry     retry.Policy
	onRetry   func(string, int, error, time.Duration)
	readGate  *httplimit.Gate // the requests in flight read one answer past 1 MiB at a time
	calls     atomic.Int64
}

// New returns a Client for o.BaseURL.
func New(o Options) (*Client, error) {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimSuffix(o.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("graph base URL %q: want http(s)://host[/version]", o.BaseURL)
	}
	if base.User != nil || base.RawQuery != "" {
		return nil, fmt.Errorf("graph base URL %q: no credentials or query, please: tokens are per account", base.Redacted())
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	p := retry.Policy{Delays: []time.Duration{time.Second, 4 * time.Second}, Jitter: 0.2}
	if o.Retry != nil {
		p = *o.Retry
	}
	// The token travels in the query: a redirect is followed only within the base URL's origin,
	// and one anywhere else fails the request (not retried) naming where it pointed, the
	// token masked.
	redirects := httplimit.SameOriginRedirects(func(r *http.Request) string {
		return r.Method + " " + httplimit.Masked(r.URL, nil)
	}, nil)
	return &Client{base: base, userAgent: o.UserAgent, retry: p, onRetry: o.OnRetry, readGate: httplimit.NewGate(8, 1<<20),
		http: &http.Client{Timeout: o.Timeout, CheckRedirect: redirects}}, nil
}

// Calls is how many HTTP requests the client has sent, retries included.
func (c *Client) Calls() int64 { return c.calls.Load() }

// Request is one GET.
type Request struct {
	// Endpoint labels the request for counting, logs and the raw store ("media", "comments").
	Endpoint string
	// Path is the node and edge below the base URL: "17841405822304914/media".
	Path string
	// Params are the query parameters (fields, limit, after), without the token.
	Params url.Values
	// Token is the access token. Secret: it is sent and never returned.
	Token string
}

// String is the request as it may be stored and logged: path and query, without the token.
func (r Request) String() string {
	if len(r.Params) == 0 {
		return r.Path
	}
	return r.Path + "?" + r.Params.Encode()
}

// Response is a 2xx answer.
type Response struct {
	// Body is the JSON as received, except that access tokens inside paging links are masked.
	Body []byte
	// Usage is what the usage headers said.
	Usage Usage
	// Calls is how many HTTP requests this answer took (more than 1 after in-process retries).
	Calls int
}

// Get sends r, retrying transport failures and retryable answers on the client's schedule. A
// throttling answer is returned at once (as an *APIError with Throttled true): waiting is the
// caller's decision. The returned error's Usage-bearing fields are set from the headers.
func (c *Client) Get(ctx context.Context, r Request) (*Response, error) {
	var resp *Response
	calls := 0
	err := c.retry.Do(ctx, func(ctx context.Context) error {
		calls++
		var err error
		resp, err = c.once(ctx, r)
		return err
	}, IsRetryable, func(attempt int, err error, wait time.Duration) {
		if c.onRetry != nil {
			c.onRetry(r.Endpoint, attempt, err, wait)
		}
	})
	if resp != nil {
		resp.Calls = calls
	}
	if err != nil {
		return nil, &CallsError{Calls: calls, Err: err}
	}
	return resp, nil
}

// CallsError carries how many HTTP requests a failed Get made.
type CallsError struct {
	Calls int
	Err   error
}

func (e *CallsError) Error() string { return e.Err.Error() }

func (e *CallsError) Unwrap() error { return e.Err }

// CallsOf returns how many requests a Get that returned err made (1 when it does not say).
func CallsOf(err error) int {
	var ce *CallsError
	if errors.As(err, &ce) {
		return ce.Calls
	}
	return 1
}

func (c *Client) once(ctx context.Context, r Request) (*Response, error) {
	u := *c.base
	u.Path = c.base.Path + "/" + strings.TrimPrefix(r.Path, "/")
	q := url.Values{}
	for k, v := range r.Params {
		q[k] = v
	}
	if r.Token != "" {
		q.Set("access_token", r.Token)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &TransportError{Endpoint: r.Endpoint, Err: errors.New("cannot build the request")}
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	req.Header.Set("Accept", "application/json")
	c.calls.Add(1)
	hr, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		// *url.Error carries the URL, and with it the token: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if re, ok := errors.AsType[*httplimit.RedirectError](err); ok {
			return nil, &RefusedError{Endpoint: r.Endpoint, Err: re} // its addresses are masked
		}
		return nil, &TransportError{Endpoint: r.Endpoint, Err: errors.New(scrub(err.Error(), r.Token))}
	}
	defer hr.Body.Close()
	body, err := c.readGate.ReadBody(ctx, hr, maxBody, "GET "+httplimit.Masked(&u, nil))
	if errors.Is(err, httplimit.ErrTooLarge) {
		return nil, &RefusedError{Endpoint: r.Endpoint, Err: err}
	}
	if err != nil {
		return nil, &TransportError{Endpoint: r.Endpoint, Err: fmt.Errorf("read body: %s", scrub(err.Error(), r.Token))}
	}
	usage := ParseUsage(hr.Header)
	body = MaskTokens(body, r.Token)
	if ae := decodeError(body); ae != nil || hr.StatusCode >= 300 {
		if ae == nil {
			ae = &APIError{Message: http.StatusText(hr.StatusCode)}
			if hr.StatusCode < 500 && hr.StatusCode != http.StatusTooManyRequests {
				// A 4xx without the envelope is not the Graph API talking (a proxy, a wrong URL).
				return nil, &TransportError{Endpoint: r.Endpoint, Err: fmt.Errorf("HTTP %d without a Graph API error body", hr.StatusCode)}
			}
		}
		ae.HTTPStatus, ae.Endpoint, ae.RegainAfter = hr.StatusCode, r.Endpoint, usage.RegainAfter()
		ae.Message = scrub(ae.Message, r.Token)
		return nil, ae
	}
	if !json.Valid(body) {
		return nil, &TransportError{Endpoint: r.Endpoint, Err: errors.New("the answer is not JSON (truncated or not the Graph API)")}
	}
	return &Response{Body: body, Usage: usage}, nil
}

func decodeError(body []byte) *APIError {
	trimmed := bytes.TrimSpace(body)
	if !bytes.HasPrefix(trimmed, []byte("{")) || !bytes.Contains(trimmed, []byte(`"error"`)) {
		return nil
	}
	var env struct {
		Error *struct {
			Message   string `json:"message"`
			Type      string `json:"type"`
			Code      int    `json:"code"`
			Subcode   int    `json:"error_subcode"`
			Transient bool   `json:"is_transient"`
			FBTraceID string `json:"fbtrace_id"`
		} `json:"error"`
	}
	if json.Unmarshal(trimmed, &env) != nil || env.Error == nil {
		return nil
	}
	e := env.Error
	return &APIError{Code: e.Code, Subcode: e.Subcode, Type: e.Type, Message: e.Message, Transient: e.Transient, FBTraceID: e.FBTraceID}
}

// tokenParam matches an access_token query parameter inside a URL in a body or message, its
// value ending at the next &, quote, backslash (JSON's \u0026) or space.
var tokenParam = regexp.MustCompile(`(access_token=)[^&"\\\s]+`)

// Mask replaces a token wherever it was found.
const Mask = "xxxxx"

// MaskTokens removes access tokens from a response body: the paging links of real answers
// carry the caller's token (`"next": "https://graph.facebook.com/...?access_token=EAAB...&after=..."`),
// and a raw store must not keep it. The token itself is also masked wherever else it appears.
func MaskTokens(body []byte, token string) []byte {
	body = tokenParam.ReplaceAll(body, []byte("${1}"+Mask))
	if len(token) >= 8 {
		body = bytes.ReplaceAll(body, []byte(token), []byte(Mask))
	}
	return body
}

func scrub(s, token string) string {
	s = tokenParam.ReplaceAllString(s, "${1}"+Mask)
	if len(token) >= 8 {
		s = strings.ReplaceAll(s, token, Mask)
		s = strings.ReplaceAll(s, url.QueryEscape(token), Mask)
	}
	return s
}
