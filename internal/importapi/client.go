// Package importapi is the client of the target system's import API, the contract in
// docs/target-import-api.md: idempotent batch import by key and checksum, deletion by key, counts,
// reads by key, and custom fields. It knows nothing of where records come from.
package importapi

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
	"strconv"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/retry"
)

// MaxItems is the most items one import.<entity>.batch or .get request may carry.
const MaxItems = 100

// MaxListItems is the most entries one import.<entity>.list page may carry.
const MaxListItems = 1000

// ListItem is one entry of import.<entity>.list: what the target holds under a key.
type ListItem struct {
	Key      string `json:"key"`
	TargetID string `json:"target_id"`
	// ContentHash is ContentHash of the payload the target holds.
	ContentHash string `json:"content_hash"`
}

// Item is one record sent to import.<entity>.batch.
type Item struct {
	Key      string          `json:"key"`
	Checksum string          `json:"checksum"`
	Payload  json.RawMessage `json:"payload"`
}

// Result is the target's answer for one item: a target id, or an error.
type Result struct {
	Key      string     `json:"key"`
	TargetID string     `json:"target_id,omitempty"`
	Status   string     `json:"status,omitempty"` // created, updated or unchanged
	Error    *ItemError `json:"error,omitempty"`
}

// ItemError is why the target did not take one item.
type ItemError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

func (e *ItemError) Error() string { return fmt.Sprintf("target: %s: %s", e.Code, e.Message) }

// Record is a record as import.<entity>.get returns it.
type Record struct {
	Key       string          `json:"key"`
	TargetID  string          `json:"target_id"`
	Checksum  string          `json:"checksum"`
	Payload   json.RawMessage `json:"payload"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Field is a custom field on the target.
type Field struct {
	Name     string          `json:"name"`
	Type     string          `json:"type"`
	Multiple bool            `json:"multiple"`
	Label    string          `json:"label,omitempty"`
	Settings json.RawMessage `json:"settings,omitempty"`
	Options  []Option        `json:"options,omitempty"`
}

// Option is one value of an enumeration field. ID is the target's id of the option, which it
// assigns on creation and answers in import.<entity>.fields; enumeration values in payloads are
// these ids.
type Option struct {
	ID      string `json:"id,omitempty"`
	Value   string `json:"value"`
	Sort    int    `json:"sort"`
	Default bool   `json:"default"`
	XMLID   string `json:"xml_id,omitempty"`
}

// FieldResult is the target's answer for one field of import.<entity>.fields.add.
type FieldResult struct {
	Name   string     `json:"name"`
	Status string     `json:"status,omitempty"` // created or exists
	Error  *ItemError `json:"error,omitempty"`
}

// Error is a failure of a whole request to the target: an error answer (4xx, 5xx) or no
// usable answer at all (Err: timeout, dropped connection). It never carries the token.
type Error struct {
	Method     string
	HTTPStatus int // 0 when no answer arrived
	Code       string
	Message    string
	Err        error
}

func (e *Error) Error() string {
	if e.refusedToken() {
		return e.refusal()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "target %s:", e.Method)
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " HTTP %d", e.HTTPStatus)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether sending the same request again may succeed: no answer, a 5xx, or
// a 429 the client gave up waiting for.
func (e *Error) Retryable() bool {
	return e.HTTPStatus == 0 || e.HTTPStatus >= 500 || e.HTTPStatus == http.StatusTooManyRequests
}

// IsRetryable reports whether err is a request-level target failure worth sending again.
func IsRetryable(err error) bool {
	te, ok := errors.AsType[*Error](err)
	return ok && te.Retryable()
}

// Options configure a Client. The zero value is usable.
type Options struct {
	// HTTPClient sends the requests; nil means a new http.Client. Its redirect policy is
	// replaced by the client's own (see New).
	HTTPClient *http.Client
	// MaxAnswerBytes caps an answer after decompression; 0 means DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// Timeout bounds one request; 0 means 60 s.
	Timeout time.Duration
	// MaxRateWaits bounds how often one request waits out a 429 and goes again; 0 means 5.
	MaxRateWaits int
	// Logger receives rate-limit waits; nil means slog.Default().
	Logger *slog.Logger
	// Sleep waits out a 429's Retry-After; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultMaxAnswerBytes caps an answer of the target after decompression: the largest, a get of
// MaxItems records with their payloads, is a few MB for rows of tens of KB.
const DefaultMaxAnswerBytes = 64 << 20

// Client calls the target's import API. It is safe for concurrent use.
type Client struct {
	base      string // ends in "/", no user info
	token     string
	maxAnswer int64
	readGate  *httplimit.Gate // set calls in flight read one answer past 8 MiB at a time
	http      *http.Client
	timeout   time.Duration
	maxWaits  int
	log       *slog.Logger
	sleep     func(ctx context.Context, d time.Duration) error
}

// New returns a client for the import API at rawURL, TARGET_WEBHOOK_URL: the token is
// its password (https://import:TOKEN@target.example.com/api/v1/). The token is sent only as a
// bearer header; errors name the address without it.
func New(rawURL string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, errors.New("target URL does not parse as a URL")
	}
	token := ""
	if u.User != nil {
		token, _ = u.User.Password()
		u.User = nil
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("target URL %s: want an absolute http(s) address", u.Redacted())
	}
	if token == "" {
		return nil, fmt.Errorf("target URL %s: want the token as its password (https://import:TOKEN@host/...)", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("target URL %s: want no query or fragment", u.Redacted())
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	t := &Client{base: u.String(), token: token, timeout: opts.Timeout, maxWaits: opts.MaxRateWaits,
		log: opts.Logger, sleep: opts.Sleep, maxAnswer: opts.MaxAnswerBytes, readGate: httplimit.NewGate(8, 8<<20)}
	hc := http.Client{}
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	}
	// Every request carries the token. A redirect is followed only within the configured origin
	// and only when it keeps the POST: 307 and 308 re-send the same body, which is safe since
	// every method is idempotent by key (and checksum); 301, 302 and 303 would turn it into a
	// bodiless GET, so they are refused like any redirect off the origin.
	hc.CheckRedirect = httplimit.SameOriginRedirects(func(r *http.Request) string {
		return r.Method + " " + r.URL.Redacted()
	}, redact.New(token))
	t.http = &hc
	if t.maxAnswer <= 0 {
		t.maxAnswer = DefaultMaxAnswerBytes
	}
	if t.timeout <= 0 {
		t.timeout = 60 * time.Second
	}
	if t.maxWaits <= 0 {
		t.maxWaits = 5
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	if t.sleep == nil {
		t.sleep = retry.Sleep
	}
	return t, nil
}

// Address returns the API's base address, which carries no secret.
func (t *Client) Address() string { return t.base }

// Import sends up to MaxItems items to import.<entity>.batch and returns one result per
// item, in the items' order.
func (t *Client) Import(ctx context.Context, entity string, items []Item) ([]Result, error) {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	method := "import." + entity + ".batch"
	results, err := perKey(ctx, t, method, "items", items, keys, func(r Result) string { return r.Key })
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.Error == nil && r.TargetID == "" {
			return nil, malformed(method, "result for %q has neither target_id nor error", r.Key)
		}
	}
	return results, nil
}

// perKey posts up to MaxItems entries (items or keys, sent under name) and returns the answer's
// results, checked to be one per key in the keys' order.
func perKey[R any](ctx context.Context, t *Client, method, name string, entries any, keys []string, key func(R) string) ([]R, error) {
	if len(keys) == 0 || len(keys) > MaxItems {
		return nil, fmt.Errorf("target %s: %d %s, want 1 to %d", method, len(keys), name, MaxItems)
	}
	var out struct {
		Results []R `json:"results"`
	}
	if err := t.call(ctx, method, map[string]any{name: entries}, &out); err != nil {
		return nil, err
	}
	if len(out.Results) != len(keys) {
		return nil, malformed(method, "%d results for %d %s", len(out.Results), len(keys), name)
	}
	for i, r := range out.Results {
		if key(r) != keys[i] {
			return nil, malformed(method, "result %d is for key %q, want %q", i, key(r), keys[i])
		}
	}
	return out.Results, nil
}

// malformed is the error of a 200 answer that does not say what the contract says it must.
func malformed(method, format string, args ...any) error {
	return &Error{Method: method, HTTPStatus: http.StatusOK, Message: fmt.Sprintf(format, args...)}
}

// DeleteResult is the target's answer for one key of import.<entity>.delete: a status, or an
// error classified as an item's in Import.
type DeleteResult struct {
	Key string `json:"key"`
	// Status is StatusDeleted or StatusNotFound; both mean the target no longer holds the key.
	Status string `json:"status,omitempty"`
	// Children is how many records the target removed with a deleted one (docs/target-import-api.md:
	// the records it owned).
	Children int        `json:"children,omitempty"`
	Error    *ItemError `json:"error,omitempty"`
}

// The statuses of a deleted key.
const (
	StatusDeleted  = "deleted"
	StatusNotFound = "not_found"
)

// Delete asks import.<entity>.delete to remove the records held under up to MaxItems keys, with
// the records they own, and returns one result per key, in the keys' order. Deleting what the
// target does not hold is not an error (StatusNotFound), so a lost answer is safe to repeat.
func (t *Client) Delete(ctx context.Context, entity string, keys []string) ([]DeleteResult, error) {
	method := "import." + entity + ".delete"
	results, err := perKey(ctx, t, method, "keys", keys, keys, func(r DeleteResult) string { return r.Key })
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		switch {
		case r.Error != nil && r.Error.Code == "":
			return nil, malformed(method, "result for %q has an error without a code", r.Key)
		case r.Error == nil && r.Status != StatusDeleted && r.Status != StatusNotFound:
			return nil, malformed(method, "result for %q has status %q and no error", r.Key, r.Status)
		case r.Children < 0:
			return nil, malformed(method, "result for %q has %d children", r.Key, r.Children)
		}
	}
	return results, nil
}

// Count returns how many records of the entity the target holds.
func (t *Client) Count(ctx context.Context, entity string) (int64, error) {
	var out struct {
		Count *int64 `json:"count"`
	}
	method := "import." + entity + ".count"
	if err := t.call(ctx, method, struct{}{}, &out); err != nil {
		return 0, err
	}
	if out.Count == nil {
		return 0, &Error{Method: method, HTTPStatus: http.StatusOK, Message: "answer has no count"}
	}
	return *out.Count, nil
}

// GetByKeys returns the records the target holds under up to MaxItems keys, and the keys
// it does not hold.
func (t *Client) GetByKeys(ctx context.Context, entity string, keys []string) ([]Record, []string, error) {
	method := "import." + entity + ".get"
	if len(keys) == 0 || len(keys) > MaxItems {
		return nil, nil, fmt.Errorf("target %s: %d keys, want 1 to %d", method, len(keys), MaxItems)
	}
	var out struct {
		Items   []Record `json:"items"`
		Missing []string `json:"missing"`
	}
	if err := t.call(ctx, method, map[string]any{"keys": keys}, &out); err != nil {
		return nil, nil, err
	}
	return out.Items, out.Missing, nil
}

// List returns one page of what the target holds for the entity, in key order (byte order),
// starting after the key cursor ("" for the first page), at most limit entries
// (MaxListItems when limit is 0 or larger); next is the cursor of the following page, "" after
// the last.
func (t *Client) List(ctx context.Context, entity, cursor string, limit int) (items []ListItem, next string, err error) {
	if limit <= 0 || limit > MaxListItems {
		limit = MaxListItems
	}
	var out struct {
		Items      []ListItem `json:"items"`
		NextCursor string     `json:"next_cursor"`
	}
	method := "import." + entity + ".list"
	if err := t.call(ctx, method, map[string]any{"cursor": cursor, "limit": limit}, &out); err != nil {
		return nil, "", err
	}
	if out.NextCursor != "" && (len(out.Items) == 0 || out.NextCursor <= cursor) {
		return nil, "", &Error{Method: method, HTTPStatus: http.StatusOK,
			Message: fmt.Sprintf("next_cursor %q does not advance past %q", out.NextCursor, cursor)}
	}
	return out.Items, out.NextCursor, nil
}

// Fields returns the entity's custom fields on the target.
func (t *Client) Fields(ctx context.Context, entity string) ([]Field, error) {
	var out struct {
		Fields []Field `json:"fields"`
	}
	if err := t.call(ctx, "import."+entity+".fields", struct{}{}, &out); err != nil {
		return nil, err
	}
	return out.Fields, nil
}

// AddFields creates custom fields on the target; a field whose name exists is left as it is.
func (t *Client) AddFields(ctx context.Context, entity string, fields []Field) ([]FieldResult, error) {
	var out struct {
		Results []FieldResult `json:"results"`
	}
	method := "import." + entity + ".fields.add"
	if err := t.call(ctx, method, map[string]any{"fields": fields}, &out); err != nil {
		return nil, err
	}
	if len(out.Results) != len(fields) {
		return nil, &Error{Method: method, HTTPStatus: http.StatusOK,
			Message: fmt.Sprintf("%d results for %d fields", len(out.Results), len(fields))}
	}
	return out.Results, nil
}

var targetMethod = regexp.MustCompile(`^import\.[a-z][a-z0-9_]*\.[a-z.]+$`)

// call posts one request, waiting out 429 answers for their Retry-After. It never repeats a
// request after any other failure: the engine decides that, item by item.
func (t *Client) call(ctx context.Context, method string, body, out any) error {
	if !targetMethod.MatchString(method) {
		return fmt.Errorf("target: invalid method %q", method)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("target %s: encode request: %w", method, err)
	}
	for waits := 0; ; waits++ {
		wait, err := t.post(ctx, method, data, out)
		if wait <= 0 || waits >= t.maxWaits {
			return err
		}
		t.log.Warn("target rate limit, waiting", "method", method, "wait", wait)
		if err := t.sleep(ctx, wait); err != nil {
			return fmt.Errorf("target %s: %w", method, err)
		}
	}
}

// post makes one request. It returns the wait a 429 asked for along with its error.
func (t *Client) post(ctx context.Context, method string, data []byte, out any) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, t.base+method, bytes.NewReader(data))
	if err != nil {
		return 0, &Error{Method: method, Err: stripURL(err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.token)
	resp, err := t.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("target %s: %w", method, context.Cause(ctx))
		}
		err = stripURL(err)
		if re, ok := errors.AsType[*httplimit.RedirectError](err); ok {
			return 0, &Error{Method: method, HTTPStatus: re.Status, Err: err} // a 3xx: not retryable
		}
		return 0, &Error{Method: method, Err: err}
	}
	defer resp.Body.Close()
	raw, err := t.readGate.ReadBody(rctx, resp, t.maxAnswer, "POST "+t.base+method)
	if err != nil {
		return 0, &Error{Method: method, HTTPStatus: resp.StatusCode, Err: stripURL(err)}
	}
	if resp.StatusCode != http.StatusOK {
		te := &Error{Method: method, HTTPStatus: resp.StatusCode}
		var env struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &env) == nil {
			te.Code, te.Message = env.Error.Code, env.Error.Message
		} else {
			te.Message = fmt.Sprintf(notJSON+" (%s, %d bytes)", resp.Header.Get("Content-Type"), len(raw))
		}
		var wait time.Duration
		if resp.StatusCode == http.StatusTooManyRequests {
			wait = time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
		}
		return wait, te
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return 0, &Error{Method: method, HTTPStatus: resp.StatusCode, Message: "answer does not decode: " + err.Error()}
	}
	return 0, nil
}

// stripURL drops the *url.Error layer, whose message quotes the request URL.
func stripURL(err error) error {
	if uerr, ok := errors.AsType[*url.Error](err); ok {
		return uerr.Err
	}
	return err
}
