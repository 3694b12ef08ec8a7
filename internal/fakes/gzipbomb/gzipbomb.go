// Package gzipbomb serves gzip answers that inflate to far more than they weigh (about 1,000
// to 1), for the fakes to test how a client bounds what it reads: 4 MB on the wire become
// 4 GiB for a client that inflates it all. The stream is cheap to serve at any size: one
// compressed member of a MiB of filler is made once and written again and again (gzip allows
// members one after another, and Go's reader, like every other, reads them as one stream).
package gzipbomb

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"sync/atomic"
)

// block is the inflated size of one repeated member.
const block = 1 << 20

// Bomb is a gzip stream of a prefix followed by filler, Size inflated bytes in all (rounded up to
// whole MiB of filler). It is safe for concurrent use.
type Bomb struct {
	head    []byte // the member holding the prefix
	member  []byte // the member holding a MiB of filler
	members int64
	written atomic.Int64
}

// New returns a bomb that inflates to prefix and then size bytes of filler (the letter a: a
// JSON string that never ends, when prefix opens one).
func New(prefix []byte, size int64) *Bomb {
	return &Bomb{
		head:    compress(prefix),
		member:  compress(bytes.Repeat([]byte("a"), block)),
		members: (size + block - 1) / block,
	}
}

func compress(p []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level never fails
	_, _ = zw.Write(p)                                     // a bytes.Buffer never fails
	_ = zw.Close()
	return b.Bytes()
}

// Compressed is the size of the whole stream on the wire.
func (b *Bomb) Compressed() int64 { return int64(len(b.head)) + b.members*int64(len(b.member)) }

// Written is how many compressed bytes all WriteTo calls so far got written: far less than
// Compressed when the reader hung up early.
func (b *Bomb) Written() int64 { return b.written.Load() }

// WriteTo writes the stream to w, stopping at w's first error.
func (b *Bomb) WriteTo(w io.Writer) (int64, error) {
	var total int64
	write := func(p []byte) error {
		n, err := w.Write(p)
		total += int64(n)
		b.written.Add(int64(n))
		return err
	}
	if err := write(b.head); err != nil {
		return total, err
	}
	for range b.members {
		if err := write(b.member); err != nil {
			return total, err
		}
	}
	return total, nil
}

// Serve answers 200 with the bomb as a gzip-encoded JSON body, as a portal behind a
// compressing proxy would.
func (b *Bomb) Serve(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	_, _ = b.WriteTo(w) // the client hanging up is what a good client does
}

// ServeHTTP makes a Bomb a handler of its own.
func (b *Bomb) ServeHTTP(w http.ResponseWriter, _ *http.Request) { b.Serve(w) }
