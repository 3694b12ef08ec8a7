package gzipbomb

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

func TestBombInflatesToPrefixAndSize(t *testing.T) {
	b := New([]byte(`{"result":"`), 8<<20)
	var wire bytes.Buffer
	n, err := b.WriteTo(&wire)
	if err != nil || n != b.Compressed() || int64(wire.Len()) != n || b.Written() != n {
		t.Fatalf("wrote %d (%v), buffer %d, Compressed %d, Written %d", n, err, wire.Len(), b.Compressed(), b.Written())
	}
	if ratio := float64(8<<20) / float64(n); ratio < 500 {
		t.Errorf("8 MiB in %d bytes: ratio %.0f, want a bomb (>= 500)", n, ratio)
	}
	zr, err := gzip.NewReader(&wire)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 12)
	if _, err := io.ReadFull(zr, head); err != nil || string(head) != `{"result":"a` {
		t.Fatalf("starts %q (%v)", head, err)
	}
	rest, err := io.Copy(io.Discard, zr)
	if err != nil || rest+12 != 8<<20+11 {
		t.Errorf("inflated %d bytes (%v), want %d", rest+12, err, 8<<20+11)
	}
}
