package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestGetClassifiesFailures(t *testing.T) {
	const page = "<html><body><p>Привет</p></body></html>"
	tests := []struct {
		name    string
		handler http.HandlerFunc
		// wantErr is the sentinel the error must wrap; nil means a
		// *StatusError with wantCode.
		wantErr  error
		wantCode int
	}{
		{
			name: "404",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<h1>Страница не найдена</h1>", http.StatusNotFound)
			},
			wantCode: http.StatusNotFound,
		},
		{
			name: "500",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<h1>500 Internal Server Error</h1>", http.StatusInternalServerError)
			},
			wantCode: http.StatusInternalServerError,
		},
		{
			name: "503",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			wantCode: http.StatusServiceUnavailable,
		},
		{
			name: "slow headers",
			handler: func(w http.ResponseWriter, r *http.Request) {
				waitForCancel(r)
			},
			wantErr: ErrTimeout,
		},
		{
			name: "slow body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "<html><body>")
				http.NewResponseController(w).Flush()
				waitForCancel(r)
			},
			wantErr: ErrTimeout,
		},
		{
			name: "lying Content-Length",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1000")
				io.WriteString(w, page)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				conn.Close()
			},
			wantErr: ErrTruncated,
		},
		{
			name: "reset mid-body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n<html>\r\n")
				buf.Flush()
				conn.(*net.TCPConn).SetLinger(0) // close with RST, not FIN
				conn.Close()
			},
			wantErr: ErrTruncated,
		},
		{
			name: "corrupt gzip",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				io.WriteString(w, page)
			},
			wantErr: ErrTruncated,
		},
		{
			name: "gzip stream cut short",
			handler: func(w http.ResponseWriter, r *http.Request) {
				z := gzipped(t, strings.Repeat(page, 100))
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(z[:len(z)/2])
			},
			wantErr: ErrTruncated,
		},
		{
			name: "over the cap by Content-Length",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, strings.Repeat("x", 2000))
			},
			wantErr: ErrTooLarge,
		},
		{
			name: "over the cap, chunked",
			handler: func(w http.ResponseWriter, r *http.Request) {
				for range 4 {
					io.WriteString(w, strings.Repeat("x", 500))
					http.NewResponseController(w).Flush()
				}
			},
			wantErr: ErrTooLarge,
		},
		{
			name: "over the cap after gunzip",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(gzipped(t, strings.Repeat("x", 2000)))
			},
			wantErr: ErrTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c := newClient(t, srv.URL, func(cfg *Config) {
				// Only the case that never answers meets a short timeout (it is certain to run
				// out); every other error must come whatever the machine's load.
				cfg.Timeout = time.Minute
				if tt.wantErr == ErrTimeout {
					cfg.Timeout = 200 * time.Millisecond
				}
				cfg.MaxBodyBytes = 1000
			})

			resp, err := c.Get(context.Background(), "/ru/post/1/")
			if err == nil {
				t.Fatalf("Get succeeded with %d bytes, want an error", len(resp.Body))
			}
			t.Logf("error: %v", err)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				var status *StatusError
				if !errors.As(err, &status) || status.Code != tt.wantCode {
					t.Errorf("error = %v, want a StatusError with code %d", err, tt.wantCode)
				}
			}
			if !IsNetwork(err) {
				t.Errorf("IsNetwork(%v) = false, want true", err)
			}
			if !strings.Contains(err.Error(), srv.URL+"/ru/post/1/") {
				t.Errorf("error %q does not name the URL", err)
			}
		})
	}
}

func TestGetReportsRedirectsWithoutFollowing(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			rec := &recorder{}
			mux := http.NewServeMux()
			mux.Handle("/ru/articles/568382/", rec)
			mux.Handle("/ru/post/568382/", http.RedirectHandler("/ru/articles/568382/", code))
			srv := httptest.NewServer(mux)
			defer srv.Close()

			_, err := newClient(t, srv.URL, nil).Get(context.Background(), "/ru/post/568382/")
			var status *StatusError
			if !errors.As(err, &status) {
				t.Fatalf("error = %v, want a StatusError", err)
			}
			if status.Code != code || status.Location != "/ru/articles/568382/" {
				t.Errorf("got code %d Location %q, want %d /ru/articles/568382/", status.Code, status.Location, code)
			}
			if !IsNetwork(err) {
				t.Errorf("IsNetwork(%v) = false, want true", err)
			}
			if !strings.Contains(err.Error(), "/ru/articles/568382/") {
				t.Errorf("error %q does not mention the Location", err)
			}
			if n := rec.count(); n != 0 {
				t.Errorf("redirect target got %d requests, want 0", n)
			}
		})
	}
}

func TestGetReportsConnectionFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there any more

	_, err := newClient(t, base, nil).Get(context.Background(), "/")
	if !errors.Is(err, ErrConnection) {
		t.Fatalf("error = %v, want ErrConnection", err)
	}
	if !IsNetwork(err) {
		t.Errorf("IsNetwork(%v) = false, want true", err)
	}
}

func TestGetTimeoutWrapsTheNetError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { waitForCancel(r) }))
	defer srv.Close()
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.Timeout = 100 * time.Millisecond })

	_, err := c.Get(context.Background(), "/")
	var netErr net.Error
	if !errors.Is(err, ErrTimeout) || !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("error = %v, want ErrTimeout wrapping a net.Error with Timeout()", err)
	}
}

// The caller's context ending is a stop, not a source failure: records must
// not be marked failed because the run is shutting down.
func TestGetContextEndIsNotNetwork(t *testing.T) {
	tests := []struct {
		name string
		// partial makes the handler send part of the body before it blocks.
		partial bool
		ctx     func(entered <-chan struct{}) (context.Context, context.CancelFunc)
		wantErr error
	}{
		{
			name: "cancelled before the request",
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
		{
			name:    "cancelled awaiting headers",
			ctx:     cancelWhenEntered,
			wantErr: context.Canceled,
		},
		{
			name:    "cancelled mid-body",
			partial: true,
			ctx:     cancelWhenEntered,
			wantErr: context.Canceled,
		},
		{
			name: "caller's deadline",
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entered := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.partial {
					io.WriteString(w, "<html>")
					http.NewResponseController(w).Flush()
				}
				entered <- struct{}{}
				waitForCancel(r)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, nil) // 30s client timeout: only the context ends these

			ctx, cancel := tt.ctx(entered)
			defer cancel()
			_, err := c.Get(ctx, "/ru/post/1/")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if IsNetwork(err) {
				t.Errorf("IsNetwork(%v) = true, want false", err)
			}
			if errors.Is(err, ErrTimeout) {
				t.Errorf("error %v is classified as a timeout", err)
			}
		})
	}
}

// cancelWhenEntered returns a context that is cancelled once the handler
// signals that it holds the request.
func cancelWhenEntered(entered <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-entered:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func TestIsNetwork(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{context.Canceled, false},
		{fmt.Errorf("fetch x: %w", context.DeadlineExceeded), false},
		{fmt.Errorf("fetch x: %w", ErrOffOrigin), false},
		{&StatusError{URL: "x", Code: 404}, true},
		{fmt.Errorf("extract: %w", &StatusError{URL: "x", Code: 302, Location: "/y/"}), true},
		{fmt.Errorf("fetch x: %w: %w", ErrTimeout, context.DeadlineExceeded), true},
		{fmt.Errorf("fetch x: %w", ErrConnection), true},
		{fmt.Errorf("fetch x: %w", ErrTruncated), true},
		{fmt.Errorf("fetch x: %w", ErrTooLarge), true},
	}
	for _, tt := range tests {
		if got := IsNetwork(tt.err); got != tt.want {
			t.Errorf("IsNetwork(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestStatusErrorMessage(t *testing.T) {
	err := &StatusError{URL: "https://habr.com/ru/post/1/", Code: 301, Location: "https://habr.com/ru/articles/1/"}
	want := "fetch https://habr.com/ru/post/1/: HTTP 301 Moved Permanently (Location: https://habr.com/ru/articles/1/)"
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if bytes.Contains([]byte((&StatusError{URL: "u", Code: 404}).Error()), []byte("Location")) {
		t.Error("a StatusError without Location mentions one")
	}
}
