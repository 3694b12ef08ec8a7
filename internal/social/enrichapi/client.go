// Package enrichapi is the client of the asynchronous enrichment contract in
// docs/enrichment-api.md: submit a batch with an idempotency token and get a job id, poll the
// job's status, read its results page by page before they expire. Providers of image
// recognition and of text analysis implement the same contract.
package enrichapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/redact"
)

// Item is one input of a job: media by URL, or a text. Ref is the caller's name for it,
// returned with its result.
type Item struct {
	Ref       string `json:"ref"`
	MediaURL  string `json:"media_url,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Text      string `json:"text,omitempty"`
}

// Submission is the body of POST /jobs.
type Submission struct {
	IdempotencyToken string `json:"idempotency_token"`
	Kind             string `json:"kind"`
	Items            []Item `json:"items"`
}

// Job statuses.
const (
	Queued    = "queued"
	Running   = "running"
	Succeeded = "succeeded"
	Failed    = "failed"
)

// Job is a job's state.
type Job struct {
	ID              string     `json:"job_id"`
	Status          string     `json:"status"`
	ResultsExpireAt *time.Time `json:"results_expire_at,omitempty"`
	Error           *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Label is one label of a result.
type Label struct {
	Name       string  `json:"name"`
	Confidence float64 `json:"confidence"`
}

// Result is the outcome for one item.
type Result struct {
	Ref    string  `json:"ref"`
	Labels []Label `json:"labels"`
	Error  string  `json:"error,omitempty"`
}

// ResultsPage is one page of GET /jobs/{id}/results.
type ResultsPage struct {
	Results       []Result `json:"results"`
	NextPageToken string   `json:"next_page_token"`
}

// Errors the contract defines.
var (
	// ErrCapReached: the provider holds as many unfinished jobs of ours as it allows (429).
	ErrCapReached = errors.New("the provider's cap on jobs in flight is reached")
	// ErrExpired: the job's results are gone (410), or the provider no longer knows the job (404).
	ErrExpired = errors.New("the job's results expired")
	// ErrNotReady: results were asked for before the job finished (409).
	ErrNotReady = errors.New("the job has not finished")
	// ErrUnauthorized: the provider refuses the bearer token (401, or 403): a configuration
	// error of that provider, not a failure of any job or item.
	ErrUnauthorized = errors.New("the provider refuses the token")
)

// MismatchError is 409 idempotency_mismatch: the idempotency token was used before with other
// items. JobID is the job the token already names, when the provider says it.
type MismatchError struct {
	JobID string
	Msg   string
}

func (e *MismatchError) Error() string {
	return "enrichment API: HTTP 409 idempotency_mismatch: " + e.Msg
}

// HTTPError is any other non-2xx answer.
type HTTPError struct {
	Status int
	Code   string
	Msg    string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("enrichment API: HTTP %d %s: %s", e.Status, e.Code, e.Msg)
}

// Retryable reports an answer that may pass (5xx, 408, 429 other than the cap).
func (e *HTTPError) Retryable() bool { return e.Status >= 500 || e.Status == 408 || e.Status == 429 }

// IsRetryable reports an error worth trying again later: a transport failure or a retryable
// answer. An answer over the cap and a redirect off the provider's origin are not.
func IsRetryable(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Retryable()
	}
	var me *MismatchError
	var re *httplimit.RedirectError
	return err != nil && !errors.Is(err, ErrCapReached) && !errors.Is(err, ErrExpired) && !errors.Is(err, ErrNotReady) &&
		!errors.Is(err, ErrUnauthorized) && !errors.As(err, &me) &&
		!errors.Is(err, httplimit.ErrTooLarge) && !errors.As(err, &re) // the provider would answer the same again
}

// maxAnswer caps an answer after decompression: a results page of a few hundred items with
// their labels is well under a MB.
const maxAnswer = 32 << 20

// Client talks to one provider.
type Client struct {
	base     *url.URL
	token    string
	http     *http.Client
	readGate *httplimit.Gate // the calls in flight read one answer past 1 MiB at a time
}

// New returns a client of the provider at base (e.g. https://vision.example/v1) with its
// bearer token (secret: sent in the Authorization header only).
func New(base, token string) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("enrichment URL %q: want http(s)://host/path", base)
	}
	if u.User != nil {
		return nil, errors.New("enrichment URL: put the token in its own variable, not in the URL")
	}
	if strings.TrimSpace(token) == "" {
		return nil, errors.New("the provider's token is empty: every call would be refused (401)")
	}
	// The bearer token goes with every request: a redirect is followed only within the
	// provider's origin and only when it keeps the method (a submission re-sent on 307 or 308 is
	// safe: its idempotency token names the same job).
	redirects := httplimit.SameOriginRedirects(func(r *http.Request) string {
		return "enrichment API " + r.Method + " " + httplimit.Masked(r.URL, nil)
	}, redact.New(token))
	return &Client{base: u, token: token, http: &http.Client{Timeout: 30 * time.Second, CheckRedirect: redirects},
		readGate: httplimit.NewGate(8, 1<<20)}, nil
}

// Submit sends a job; the same token with the same items returns the same job. A resend must
// carry exactly the submission first sent under its token (store it before sending).
func (c *Client) Submit(ctx context.Context, s Submission) (Job, error) {
	body, _ := json.Marshal(s)
	var j Job
	_, err := c.do(ctx, http.MethodPost, "/jobs", body, &j)
	return j, err
}

// Status reads a job's state.
func (c *Client) Status(ctx context.Context, id string) (Job, error) {
	var j Job
	_, err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(id), nil, &j)
	return j, err
}

// Results reads one page of a finished job's results; it also returns the body as received.
func (c *Client) Results(ctx context.Context, id, pageToken string) (ResultsPage, []byte, error) {
	path := "/jobs/" + url.PathEscape(id) + "/results"
	if pageToken != "" {
		path += "?page_token=" + url.QueryEscape(pageToken)
	}
	var p ResultsPage
	raw, err := c.do(ctx, http.MethodGet, path, nil, &p)
	return p, raw, err
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) ([]byte, error) {
	u := c.base.String() + path
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("enrichment API: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if re, ok := errors.AsType[*httplimit.RedirectError](err); ok {
			return nil, re // it names the call, its addresses masked
		}
		return nil, fmt.Errorf("enrichment API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := c.readGate.ReadBody(ctx, resp, maxAnswer, "enrichment API "+method+" "+httplimit.Masked(req.URL, nil))
	if errors.Is(err, httplimit.ErrTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("enrichment API %s %s: read: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var env struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			JobID string `json:"job_id"`
		}
		_ = json.Unmarshal(raw, &env)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests && env.Error.Code == "too_many_jobs":
			return nil, ErrCapReached
		case resp.StatusCode == http.StatusGone, resp.StatusCode == http.StatusNotFound:
			return nil, fmt.Errorf("%w: %s", ErrExpired, env.Error.Message)
		case resp.StatusCode == http.StatusConflict && env.Error.Code == "not_ready":
			return nil, ErrNotReady
		case resp.StatusCode == http.StatusConflict && env.Error.Code == "idempotency_mismatch":
			return nil, &MismatchError{JobID: env.JobID, Msg: env.Error.Message}
		case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
			return nil, fmt.Errorf("%w: HTTP %d %s", ErrUnauthorized, resp.StatusCode, env.Error.Code)
		}
		return nil, &HTTPError{Status: resp.StatusCode, Code: env.Error.Code, Msg: env.Error.Message}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("enrichment API %s %s: the answer is not the contract's JSON: %w", method, path, err)
	}
	return raw, nil
}
