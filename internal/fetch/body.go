package fetch

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// readBody reads the whole body, gunzipping it if needed, and fails with
// ErrTooLarge once the decompressed size passes the cap.
func (c *Client) readBody(resp *http.Response) ([]byte, error) {
	var r io.Reader = resp.Body
	switch strings.ToLower(resp.Header.Get("Content-Encoding")) {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, err // "gzip: invalid header" says enough
		}
		defer zr.Close()
		r = zr
	case "", "identity":
		if resp.ContentLength > c.maxBody {
			return nil, fmt.Errorf("%w: Content-Length %d is over %d bytes", ErrTooLarge, resp.ContentLength, c.maxBody)
		}
	default:
		// We only ever ask for gzip, so anything else is a broken response.
		return nil, fmt.Errorf("unsupported Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}

	body, err := io.ReadAll(io.LimitReader(r, c.maxBody+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > c.maxBody {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, c.maxBody)
	}
	return body, nil
}

// isText reports whether a Content-Type is text/*, the bodies we convert to
// UTF-8. XML feeds (application/rss+xml) are left alone: they declare their
// encoding in the XML prolog, which an XML decoder honours.
func isText(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && strings.HasPrefix(mediaType, "text/")
}

// toUTF8 converts body to UTF-8. Like miniflux, it trusts a body that is
// already valid UTF-8 over its declaration. Otherwise the charset comes from
// Content-Type, then from a <meta> in the first 1024 bytes; with neither,
// x/net/html/charset falls back to windows-1252. Bytes that still do not
// decode become U+FFFD, so the result is always valid UTF-8.
func toUTF8(body []byte, contentType string) []byte {
	if utf8.Valid(body) {
		return body
	}
	enc, name, _ := charset.DetermineEncoding(body, contentType)
	if name != "utf-8" {
		if decoded, err := enc.NewDecoder().Bytes(body); err == nil {
			return decoded
		}
	}
	return bytes.ToValidUTF8(body, []byte("\uFFFD"))
}
