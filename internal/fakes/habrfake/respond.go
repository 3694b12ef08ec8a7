package habrfake

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
)

const htmlContentType = "text/html; charset=UTF-8"

// response is a whole answer, built before anything is written so that
// faults can reshape it.
type response struct {
	status      int
	contentType string
	location    string
	body        []byte
}

// write sends res, gzipped when the client accepts gzip.
func write(w http.ResponseWriter, r *http.Request, res *response) {
	h := w.Header()
	h.Set("Content-Type", res.contentType)
	h.Set("Vary", "Accept-Encoding")
	if res.location != "" {
		h.Set("Location", res.location)
	}
	body := res.body
	if acceptsGzip(r) && len(body) > 0 {
		body = gzipBytes(body)
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(res.status)
	w.Write(body)
}

// writeTruncated promises the whole body, sends half and drops the
// connection. It never gzips: the cut must fall in the bytes on the wire.
func writeTruncated(w http.ResponseWriter, res *response) {
	h := w.Header()
	h.Set("Content-Type", res.contentType)
	h.Set("Content-Length", strconv.Itoa(len(res.body)))
	w.WriteHeader(res.status)
	w.Write(res.body[:len(res.body)/2])
	http.NewResponseController(w).Flush()
	// The documented way to make net/http close the connection mid-response
	// without logging a panic.
	panic(http.ErrAbortHandler)
}

// acceptsGzip reports whether Accept-Encoding lists gzip without q=0.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// gzipBytes compresses at level 1, nginx's default gzip_comp_level.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // a valid level cannot fail
	zw.Write(b)                                        // writes to a bytes.Buffer cannot fail
	zw.Close()
	return buf.Bytes()
}
