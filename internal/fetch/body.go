package fetch

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/ingest-dev/ingest/internal/httplimit"
)

// readBody reads the whole body, gunzipping it if needed, and fails with
// ErrTooLarge once the decompressed size passes the cap (httplimit reads no
// further than that, so a gzip bomb costs the cap).
func (c *Client) readBody(resp *http.Response) ([]byte, error) {
	body, err := httplimit.ReadBody(resp, c.maxBody, "")
	if errors.Is(err, httplimit.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return body, err
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
