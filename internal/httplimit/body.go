package httplimit

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrTooLarge is what every *TooLargeError is (errors.Is).
var ErrTooLarge = errors.New("answer too large")

// TooLargeError is an answer whose decompressed body passed the cap. Reading stopped there.
type TooLargeError struct {
	// Call names the request without its secrets, e.g. "bitrix batch" or "GET https://host/x".
	Call string
	// Limit is the cap in bytes.
	Limit int64
}

func (e *TooLargeError) Error() string {
	msg := fmt.Sprintf("answer larger than %d bytes (%s)", e.Limit, human(e.Limit))
	if e.Call != "" {
		return e.Call + ": " + msg
	}
	return msg
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

func human(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// firstRead is the buffer a body of unknown length starts with; it doubles from there.
const firstRead = 32 << 10

// ReadBody reads resp.Body to its end and returns it decompressed: by the transport when it
// already did (resp.Uncompressed, which Go does when the client did not set Accept-Encoding
// itself), else here for gzip. More than limit decompressed bytes fail with a *TooLargeError
// naming call, having read limit+1 bytes at most and held at most about 1.5 times limit. It
// does not close the body.
func ReadBody(resp *http.Response, limit int64, call string) ([]byte, error) {
	return readBody(resp, limit, call, nil)
}

// readBody is ReadBody calling grow, when not nil, before the buffer grows to a new size.
func readBody(resp *http.Response, limit int64, call string, grow func(size int64) error) ([]byte, error) {
	r, hint, err := decoded(resp)
	if err != nil && call != "" {
		return nil, fmt.Errorf("%s: %w", call, err)
	}
	if err != nil {
		return nil, err
	}
	if hint > limit {
		return nil, &TooLargeError{Call: call, Limit: limit}
	}
	body, err := read(r, limit, hint, grow)
	if errors.Is(err, ErrTooLarge) {
		return nil, &TooLargeError{Call: call, Limit: limit}
	}
	return body, err
}

// decoded returns the body to read, decompressed, with its length when the answer says it
// (-1 otherwise).
func decoded(resp *http.Response) (io.Reader, int64, error) {
	if resp.Uncompressed {
		return resp.Body, -1, nil // the transport gunzips; Content-Length was the compressed one
	}
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return resp.Body, resp.ContentLength, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, 0, fmt.Errorf("gunzip the answer: %w", err)
		}
		return zr, -1, nil
	default:
		// Only gzip is ever asked for (by us or by Go's transport).
		return nil, 0, fmt.Errorf("answer in an unsupported Content-Encoding %q", enc)
	}
}

// read reads r to EOF into a buffer that starts at the announced length (or firstRead) and
// doubles, never past limit+1: one byte over the cap is how an answer is known to be too large
// without reading any more of it.
func read(r io.Reader, limit, hint int64, grow func(size int64) error) ([]byte, error) {
	size := int64(firstRead)
	if hint >= 0 {
		size = hint + 1 // room to see EOF without growing
	}
	size = min(size, limit+1)
	if grow != nil {
		if err := grow(size); err != nil {
			return nil, err
		}
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, ErrTooLarge
			}
			size := min(2*int64(cap(buf))+firstRead, limit+1)
			if grow != nil {
				if err := grow(size); err != nil {
					return nil, err
				}
			}
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			if int64(len(buf)) > limit {
				return nil, ErrTooLarge
			}
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}
