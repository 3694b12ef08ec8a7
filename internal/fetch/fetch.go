// Package fetch downloads pages from one origin for the length of one run.
//
// A Client holds a single http.Client, so keep-alive connections are reused
// across a batch. It never follows redirects, caps every body after
// decompression, converts text to UTF-8 and reports every failure as a
// classified error that names the URL (see IsNetwork).
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Defaults applied by New when a Config field is zero.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultTimeout        = 30 * time.Second
	DefaultMaxBodyBytes   = 10 << 20
)

// Config describes the one origin a Client talks to and its limits.
type Config struct {
	// BaseURL is the only origin ever fetched, e.g. https://habr.com or a
	// fake's URL. It must have a scheme and host and no path.
	BaseURL string
	// UserAgent names the tool honestly, e.g.
	// "ingest/1.0 (+https://github.com/ingest-dev/ingest)".
	UserAgent string
	// ConnectTimeout bounds dialing and the TLS handshake (default 10s).
	ConnectTimeout time.Duration
	// Timeout bounds a whole request, body included (default 30s).
	Timeout time.Duration
	// MaxBodyBytes caps the decompressed body (default 10 MiB).
	MaxBodyBytes int64
}

// Client fetches pages from the configured origin. It is safe for
// concurrent use.
type Client struct {
	base      *url.URL
	userAgent string
	maxBody   int64
	http      *http.Client
}

// Response is a fully read 2xx response.
type Response struct {
	// URL is the URL actually requested, on the configured origin.
	URL         string
	StatusCode  int
	ContentType string
	// Body is decompressed, and converted to UTF-8 when the content type is
	// text/* (by the charset in Content-Type or a <meta> in the page).
	Body []byte
}

// New builds a Client from cfg, filling in defaults.
func New(cfg Config) (*Client, error) {
	base, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("fetch: base URL: %w", err)
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return nil, fmt.Errorf("fetch: base URL %q: want http(s)://host", cfg.BaseURL)
	}
	if base.Path != "" && base.Path != "/" || base.RawQuery != "" || base.User != nil {
		return nil, fmt.Errorf("fetch: base URL %q: want an origin without path, query or credentials", cfg.BaseURL)
	}
	if cfg.UserAgent == "" {
		return nil, errors.New("fetch: a user agent is required")
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}

	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: cfg.ConnectTimeout,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		// We send Accept-Encoding and gunzip ourselves so that the size cap
		// applies to decompressed bytes.
		DisableCompression: true,
	}
	return &Client{
		base:      &url.URL{Scheme: base.Scheme, Host: base.Host},
		userAgent: cfg.UserAgent,
		maxBody:   cfg.MaxBodyBytes,
		http: &http.Client{
			Transport: transport,
			Timeout:   cfg.Timeout,
			// A redirect is reported, not followed: the spec counts it as a
			// network error, and following it could leave the origin.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Get fetches ref, which is a path ("/ru/post/1/"), an absolute URL on the
// configured origin, or an absolute https://habr.com/... URL whose path and
// query are then requested on the configured origin (records keep real Habr
// links while a run targets a mirror or a fake). Any other ref fails with
// ErrOffOrigin before a request is made.
//
// A non-2xx status is a *StatusError; other failures wrap one of the
// sentinels in errors.go, or the context's error when ctx ends.
func (c *Client) Get(ctx context.Context, ref string) (*Response, error) {
	u, err := c.resolve(ref)
	if err != nil {
		return nil, err
	}
	target := u.String()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", target, err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/rss+xml,application/xml;q=0.9,*/*;q=0.8")

	resp, err := c.http.Do(req)
	if err != nil {
		return nil, classify(ctx, target, err, ErrConnection)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Read a little of the error page so the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		return nil, &StatusError{URL: target, Code: resp.StatusCode, Location: resp.Header.Get("Location")}
	}

	body, err := c.readBody(resp)
	if err != nil {
		return nil, classify(ctx, target, err, ErrTruncated)
	}
	contentType := resp.Header.Get("Content-Type")
	if isText(contentType) {
		body = toUTF8(body, contentType)
	}
	return &Response{URL: target, StatusCode: resp.StatusCode, ContentType: contentType, Body: body}, nil
}
