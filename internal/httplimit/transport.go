package httplimit

import (
	"io"
	"net/http"
)

// Capped wraps rt (nil: http.DefaultTransport) so that every answer's body fails with a
// *TooLargeError once more than limit bytes were read from it: for clients whose bodies a
// library reads (the Pushgateway's), where ReadBody cannot be put. The bytes counted are the
// ones rt hands over, decompressed when rt is an http.Transport gunzipping for a request that
// did not set Accept-Encoding itself.
func Capped(rt http.RoundTripper, limit int64) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return cappedTransport{rt: rt, limit: limit}
}

type cappedTransport struct {
	rt    http.RoundTripper
	limit int64
}

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.limit,
		err: &TooLargeError{Call: req.Method + " " + Masked(req.URL, nil), Limit: t.limit}}
	return resp, nil
}

// cappedBody passes at most left bytes on and then fails with err.
type cappedBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed shows the body goes on
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, b.err
	}
	return n, err
}
