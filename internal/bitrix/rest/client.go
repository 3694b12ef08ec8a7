// Package rest is a client for the Bitrix24 REST API called through an
// incoming webhook (https://<portal>/rest/<user>/<token>/<method>.json).
//
// It keeps to the portal's limits instead of discovering them: a token
// bucket in step with the portal's leaky bucket paces every request, the
// operating time the portal reports per method pauses that method before it
// gets blocked, and the failures that still happen are sorted into retryable
// (rate limit, operating-time block, and for read methods 5xx answers,
// timeouts and broken connections) and permanent (authentication, scope,
// permissions, unknown methods), the latter with a message that says what
// to fix. The webhook token is part of every request URL and of nothing
// else: errors and logs name the method and Redacted() address only.
package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/rawjson"
	redaction "github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/retry"
)

const (
	// defaultTimeout is longer than the 60 s after which the portal itself
	// interrupts a request, so a slow but valid answer is not cut off.
	defaultTimeout = 70 * time.Second
	// DefaultMaxAnswerBytes caps an answer after decompression: a batch of 50
	// list pages of wide rows (5 KB a row, 2,500 rows) is about 13 MB, and the
	// engine keeps an answer until stored at about 4 times its size, so one at
	// the cap (256 MiB held) still fits the walk's budget, half the pod's 512
	// MiB, alone.
	DefaultMaxAnswerBytes = 64 << 20
	// maxOperatingWaits bounds how often one call sits out a 429: enough for
	// the ten one-minute buckets of the portal's window to drain, plus one.
	maxOperatingWaits = 11
)

// Options configure a Client. The zero value is usable.
type Options struct {
	// HTTPClient sends the requests; nil means a new http.Client. Its
	// redirect policy is replaced: redirects are handled by the client.
	HTTPClient *http.Client
	// MaxAnswerBytes caps an answer after decompression; 0 means
	// DefaultMaxAnswerBytes. A larger answer fails its call for good.
	MaxAnswerBytes int64
	// ReadGate bounds the answers read at once (see httplimit.Gate); nil
	// means a gate of the client's own for 8 answers of up to 8 MiB and one
	// larger: reading then holds at most about 192 MiB (with the default
	// cap) however many calls are in flight. Share one among the clients of
	// a process, as the Limiter.
	ReadGate *httplimit.Gate
	// Rate is the portal's leaky bucket; the zero value means DefaultRate().
	// Its drain interval is the least wait before a request the portal
	// refused with QUERY_LIMIT_EXCEEDED is sent again.
	Rate Rate
	// Limiter paces every HTTP request. Share one limiter among all the
	// clients of a process, since the portal counts all our requests
	// together. Nil means Rate.NewLimiter().
	Limiter *rate.Limiter
	// Retry is the schedule for retryable failures; nil Delays means
	// retry.Default(). Its Sleep, if nil, is taken from Sleep below.
	// QUERY_LIMIT_EXCEEDED refusals follow the same delays and jitter, each
	// at least one drain interval, on a budget of their own long enough
	// for a full bucket to drain twice (Rate's Burst over its PerSecond).
	Retry retry.Policy
	// Timeout bounds one HTTP request; 0 means 70 s.
	Timeout time.Duration
	// OperatingLimit is the portal's operating-time limit per method over
	// 10 minutes; 0 means 480 s, the documented cloud value.
	OperatingLimit time.Duration
	// OperatingHeadroom is how far below OperatingLimit a method is paused
	// pre-emptively until the portal's window frees up; 0 means 60 s, the
	// longest a single request may run.
	OperatingHeadroom time.Duration
	// ReadOnly reports whether a method only reads, which makes it safe to
	// repeat after a timeout or a 5xx answer. Nil means IsReadMethod.
	ReadOnly func(method string) bool
	// Logger receives retries, pauses and redirects; nil means slog.Default().
	Logger *slog.Logger
	// Now and Sleep are the clock for operating-time pauses and retry
	// waits; nil means the real clock. Tests pass a fake one shared with a
	// fake portal.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// UserAgent is sent with every request, as the documentation asks;
	// empty means "ingest".
	UserAgent string
}

// Client calls one portal through one webhook. It is safe for concurrent
// use.
type Client struct {
	http      *http.Client
	limiter   *rate.Limiter
	drain     time.Duration // one request's worth of the portal's bucket draining
	retry     retry.Policy  // 5xx answers and network failures of reads
	limited   retry.Policy  // QUERY_LIMIT_EXCEEDED refusals (limitSchedule)
	timeout   time.Duration
	readOnly  func(string) bool
	log       *slog.Logger
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error
	userAgent string
	ops       *operating
	stats     counters
	maxAnswer int64
	readGate  *httplimit.Gate
	secrets   *redaction.Redactor // the token, for the addresses of refused redirects
	base      url.URL             // the webhook address, ending in "/"
}

// New returns a client for the webhook at webhookURL, like
// https://portal.bitrix24.ru/rest/1/TOKEN/. Its errors never contain the
// token.
func New(webhookURL string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(webhookURL))
	if err != nil {
		return nil, errors.New("bitrix webhook URL does not parse as a URL")
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("bitrix webhook URL %s: want an absolute http(s) address", redact(u))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("bitrix webhook URL %s: want no user info, query or fragment", redact(u))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath = ""

	c := &Client{
		limiter:   opts.Limiter,
		retry:     opts.Retry,
		timeout:   opts.Timeout,
		readOnly:  opts.ReadOnly,
		log:       opts.Logger,
		now:       opts.Now,
		sleep:     opts.Sleep,
		userAgent: opts.UserAgent,
		maxAnswer: opts.MaxAnswerBytes,
		readGate:  opts.ReadGate,
		secrets:   redaction.New(webhookToken(u)),
		base:      *u,
	}
	if c.maxAnswer <= 0 {
		c.maxAnswer = DefaultMaxAnswerBytes
	}
	if c.readGate == nil {
		c.readGate = httplimit.NewGate(8, 8<<20)
	}
	bucket := opts.Rate
	if bucket.PerSecond <= 0 {
		bucket = DefaultRate()
	}
	c.drain = time.Duration(float64(time.Second) / bucket.PerSecond)
	if c.limiter == nil {
		c.limiter = bucket.NewLimiter()
	}
	if c.retry.Delays == nil {
		c.retry = retry.Default()
	}
	if c.timeout <= 0 {
		c.timeout = defaultTimeout
	}
	if c.readOnly == nil {
		c.readOnly = IsReadMethod
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = retry.Sleep
	}
	if c.retry.Sleep == nil {
		c.retry.Sleep = c.sleep
	}
	if c.userAgent == "" {
		c.userAgent = "ingest"
	}
	c.limited = limitSchedule(c.retry, bucket, c.drain)
	limit, headroom := opts.OperatingLimit, opts.OperatingHeadroom
	if limit <= 0 {
		limit = 480 * time.Second
	}
	if headroom <= 0 {
		headroom = 60 * time.Second
	}
	c.ops = newOperating(limit, headroom)

	hc := http.Client{}
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	}
	// Go turns a POST into a GET on 302 and drops its body; the portal's
	// move notice must instead be answered by re-sending the POST.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http = &hc
	return c, nil
}

// Redacted returns the webhook address with the token masked, for logs.
func (c *Client) Redacted() string {
	return redact(&c.base)
}

// Stats returns what the client has done so far.
func (c *Client) Stats() Stats { return c.stats.snapshot() }

// Call runs one method with params (anything that marshals to a JSON
// object, or to a list for the few methods with positional parameters; nil
// means none) and returns its answer. Failures are *APIError or
// *TransportError values; rate limits and operating-time blocks are waited
// out, and read methods are retried after 5xx answers and network failures.
func (c *Client) Call(ctx context.Context, method string, params any) (*Response, error) {
	if err := checkMethod(method); err != nil {
		return nil, err
	}
	body, err := encodeParams(params)
	if err != nil {
		return nil, fmt.Errorf("bitrix %s: encode params: %w", method, err)
	}
	env, err := c.send(ctx, method, []string{method}, body, c.readOnly(method))
	if err != nil {
		return nil, err
	}
	return &Response{Result: env.Result, Next: env.Next, Total: env.Total, Time: env.Time}, nil
}

// IsReadMethod reports whether a method only reads, judged by its last
// word: get, list, getlist, fields or current.
func IsReadMethod(method string) bool {
	m := strings.ToLower(method)
	last := m[strings.LastIndexByte(m, '.')+1:]
	switch last {
	case "get", "list", "getlist", "fields", "current",
		"instances": // bizproc.workflow.instances, the list of running workflows
		return true
	}
	return false
}

var methodName = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$`)

func checkMethod(method string) error {
	if !methodName.MatchString(method) {
		return fmt.Errorf("bitrix: invalid method name %q", method)
	}
	return nil
}

func encodeParams(params any) ([]byte, error) {
	switch p := params.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		return p, nil
	}
	return json.Marshal(params)
}

// send runs a call under the retry policy. gate lists the methods whose
// operating-time pauses the call must respect: the method itself, and for
// a batch the methods of its commands.
//
// Two loops, one schedule: the inner one waits out QUERY_LIMIT_EXCEEDED
// under c.limited, the outer one repeats reads after 5xx answers and
// network failures under c.retry. A refusal is kept apart because it is
// safe whatever the method and says only that the bucket is full, which
// (filled by a previous run or another client on our address) can take
// longer to drain than the three retries meant for a failing portal; the
// very first calls of a run, which meet a bucket our limiter knows
// nothing of, are where that shows.
func (c *Client) send(ctx context.Context, method string, gate []string, body []byte, idempotent bool) (*envelope, error) {
	var env *envelope
	onRetry := func(attempt int, err error, wait time.Duration) {
		c.stats.retries.Add(1)
		c.log.Warn("bitrix call failed, retrying", "method", method, "retry", attempt, "wait", wait, "err", err)
	}
	err := c.retry.Do(ctx, func(ctx context.Context) error {
		return c.limited.Do(ctx, func(ctx context.Context) error {
			var err error
			env, err = c.attempt(ctx, method, gate, body)
			return err
		}, func(err error) bool { return classify(err) == failRateLimit }, onRetry)
	}, func(err error) bool {
		return idempotent && classify(err) == failTransient // a write may have happened: never repeat it
	}, onRetry)
	return env, err
}

// limitSchedule is the schedule for QUERY_LIMIT_EXCEEDED refusals: p's
// delays, each at least one drain interval (any sooner the bucket has no
// room yet, and the retry would only be refused and counted again), its
// last one repeated until the waits add up to twice the time the portal's
// full bucket takes to drain: once for what filled it, once more for the
// other client that may still be sending at our pace.
func limitSchedule(p retry.Policy, bucket Rate, drain time.Duration) retry.Policy {
	delays := make([]time.Duration, 0, len(p.Delays))
	var total time.Duration
	for _, d := range p.Delays {
		delays = append(delays, max(d, drain))
		total += max(d, drain)
	}
	last := drain
	if n := len(delays); n > 0 {
		last = delays[n-1]
	}
	full := 2 * time.Duration(float64(bucket.Burst)/bucket.PerSecond*float64(time.Second))
	for ; total < full; total += last {
		delays = append(delays, last)
	}
	p.Delays = delays
	return p
}

// attempt makes one call. It first waits until none of the gate methods is
// paused, and sits out OPERATION_TIME_LIMIT answers by pausing the method
// and trying again, since the portal refuses such calls before running them.
func (c *Client) attempt(ctx context.Context, method string, gate []string, body []byte) (*envelope, error) {
	for waits := 0; ; waits++ {
		for _, m := range gate {
			if err := c.waitOperating(ctx, m); err != nil {
				return nil, fmt.Errorf("bitrix %s: %w", method, err)
			}
		}
		env, err := c.post(ctx, method, body)
		if err == nil {
			c.observe(method, env.Time)
			return env, nil
		}
		switch classify(err) {
		case failRateLimit:
			c.stats.queryLimit.Add(1)
			c.assumeBucketFull()
		case failTransient:
			c.stats.serverErrors.Add(1)
		case failOperating:
			c.stats.operationLimit.Add(1)
			if waits < maxOperatingWaits {
				until := c.ops.blocked(method, c.now())
				c.log.Warn("bitrix method blocked by its operating time limit, pausing it", "method", method, "until", until)
				continue
			}
		}
		return nil, err
	}
}

// observe feeds a successful answer's timing to the operating-time tracker.
func (c *Client) observe(method string, t Time) {
	if until := c.ops.observe(method, t, c.now()); !until.IsZero() {
		c.log.Info("bitrix method close to its operating time limit, pausing it",
			"method", method, "operating_s", t.Operating, "until", until)
	}
}

func (c *Client) waitOperating(ctx context.Context, method string) error {
	d := c.ops.pausedUntil(method).Sub(c.now())
	if d <= 0 {
		return nil
	}
	c.stats.paused.Add(int64(d))
	return c.sleep(ctx, d)
}

// assumeBucketFull empties the limiter after a 503: the portal's bucket was
// fuller than ours thought (another client on our address, or a previous
// run), so go on at the drain rate until it has room again.
func (c *Client) assumeBucketFull() {
	now := time.Now()
	if n := int(c.limiter.TokensAt(now)); n > 0 {
		c.limiter.ReserveN(now, n)
	}
}

// post sends the request, re-sending it where the portal points when it
// answers with a redirect within the webhook's origin. A redirect anywhere
// else is refused before anything is sent there, since every request
// carries the token: a renamed portal (the cloud answers its old address
// with 302 to the new one) is the operator's to confirm by changing
// BITRIX_WEBHOOK_URL, not something a stray Location may decide.
func (c *Client) post(ctx context.Context, method string, body []byte) (*envelope, error) {
	target := c.endpoint(method)
	for hop := 0; ; hop++ {
		if err := c.limiter.Wait(ctx); err != nil {
			return nil, fmt.Errorf("bitrix %s: wait for rate limiter: %w", method, err)
		}
		status, header, data, err := c.roundTrip(ctx, method, target, body)
		if err != nil {
			return nil, err
		}
		switch status {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
			http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			next, err := c.redirect(method, status, target, header.Get("Location"), hop)
			if err != nil {
				return nil, err
			}
			target = next
			continue
		}
		return decodeAnswer(method, status, header.Get("Content-Type"), data)
	}
}

// redirect checks a redirect of a request to target and returns where to
// re-send it: only within the webhook's origin, at most
// httplimit.MaxRedirects times. A refusal is a *httplimit.RedirectError
// naming the address without the token.
func (c *Client) redirect(method string, status int, target *url.URL, location string, hop int) (*url.URL, error) {
	call := "bitrix " + method
	next, err := httplimit.Check(call, status, target, location, c.secrets)
	if re, ok := errors.AsType[*httplimit.RedirectError](err); ok && location != "" && !re.Insecure {
		re.Hint = "if the portal moved to that address, set BITRIX_WEBHOOK_URL to it: the webhook's token is never sent off the configured origin"
	}
	if err != nil {
		return nil, err
	}
	if hop >= httplimit.MaxRedirects {
		return nil, &httplimit.RedirectError{Call: call, Status: status, Location: httplimit.Masked(next, c.secrets),
			Reason: fmt.Sprintf("more than %d redirects", httplimit.MaxRedirects)}
	}
	c.stats.redirects.Add(1)
	c.log.Warn("bitrix portal redirected the request within its address; following it",
		"method", method, "status", status, "to", httplimit.Masked(next, c.secrets))
	return next, nil
}

func (c *Client) roundTrip(ctx context.Context, method string, target *url.URL, body []byte) (int, http.Header, []byte, error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("bitrix %s: build request: %w", method, stripURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	c.stats.requests.Add(1)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, c.transportError(ctx, method, err)
	}
	defer resp.Body.Close()
	// The cap counts decompressed bytes and stops reading at it: a gzip bomb
	// costs the cap, not what it inflates to, and the gate keeps the calls in
	// flight from reading more than one answer past 8 MiB at once. An answer
	// over the cap is not retried (IsPermanent): the portal would send the
	// same again.
	data, err := c.readGate.ReadBody(rctx, resp, c.maxAnswer, "POST "+httplimit.Masked(target, c.secrets))
	if err != nil {
		return 0, nil, nil, c.transportError(ctx, method, err)
	}
	return resp.StatusCode, resp.Header, data, nil
}

// transportError turns a failed request into a TransportError without the
// request URL, or into the caller's own context error if that ended it.
func (c *Client) transportError(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("bitrix %s: %w", method, context.Cause(ctx))
	}
	err = stripURL(err)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %v: %w", c.timeout, context.DeadlineExceeded)
	}
	return &TransportError{Method: method, Err: err}
}

// stripURL drops the *url.Error layer, whose message quotes the URL and so
// the token.
func stripURL(err error) error {
	if uerr, ok := errors.AsType[*url.Error](err); ok {
		return uerr.Err
	}
	return err
}

func (c *Client) endpoint(method string) *url.URL {
	return c.base.JoinPath(method + ".json")
}

// webhookToken is the secret of a webhook address: the segment after the
// user id in /rest/<user>/<token>/, or the whole path when it has another
// form.
func webhookToken(u *url.URL) string {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i, s := range segs {
		if s == "rest" && i+2 < len(segs) {
			return segs[i+2]
		}
	}
	return strings.Trim(u.Path, "/")
}

// redact masks the token in a webhook address: the segment after the user
// id in /rest/<user>/<token>/, or the whole path when it has another form.
func redact(u *url.URL) string {
	origin := u.Scheme + "://" + u.Host
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i, s := range segs {
		if s == "rest" && i+2 < len(segs) {
			segs[i+2] = "***"
			return origin + "/" + strings.Join(segs, "/") + "/"
		}
	}
	if u.Path != "" && u.Path != "/" {
		return origin + "/***/"
	}
	return origin
}

// envelope is the JSON shape of every answer, success or error.
type envelope struct {
	Result           json.RawMessage `json:"result"`
	Next             *int            `json:"next"`
	Total            *int            `json:"total"`
	Time             Time            `json:"time"`
	Error            json.RawMessage `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

func decodeAnswer(method string, status int, contentType string, data []byte) (*envelope, error) {
	env, err := splitEnvelope(data)
	if err != nil {
		if contentType == "" {
			contentType = "no content type"
		}
		return nil, &APIError{Method: method, HTTPStatus: status, notJSON: true, Code: plainCode(data),
			Description: fmt.Sprintf("answer is not the JSON envelope (%s, %d bytes)", contentType, len(data))}
	}
	if env.Error != nil {
		return nil, &APIError{Method: method, HTTPStatus: status, Code: errorCode(env.Error), Description: env.ErrorDescription}
	}
	if env.Result == nil {
		return nil, &APIError{Method: method, HTTPStatus: status, Description: "answer has neither result nor error"}
	}
	if status < 200 || status > 299 {
		return nil, &APIError{Method: method, HTTPStatus: status, Description: "result with an error status"}
	}
	return env, nil
}

// splitEnvelope reads an answer as json.Unmarshal into an envelope would (member names matched
// regardless of case, the last of a repeated member winning), validating the answer once and
// then splitting it: decoding it in full scanned a listing's megabytes twice, and result is
// only split further, never decoded, by the callers. Result points into data.
func splitEnvelope(data []byte) (*envelope, error) {
	if !json.Valid(data) {
		return nil, errors.New("not JSON")
	}
	var env envelope
	var err error
	splitErr := rawjson.Members(data, func(k string, v json.RawMessage) {
		var e error
		switch strings.ToLower(k) {
		case "result":
			env.Result = v
		case "next":
			e = json.Unmarshal(v, &env.Next)
		case "total":
			e = json.Unmarshal(v, &env.Total)
		case "time":
			e = json.Unmarshal(v, &env.Time)
		case "error":
			env.Error = v
			if string(v) == "null" {
				env.Error = nil
			}
		case "error_description":
			e = json.Unmarshal(v, &env.ErrorDescription)
		}
		err = errors.Join(err, e)
	})
	if err = errors.Join(splitErr, err); err != nil {
		return nil, err
	}
	return &env, nil
}

// errorCode reads the "error" member, a string in nearly every answer but
// a number in a few (tasks.task.list has sent "0" and 0).
func errorCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}
