package httplimit

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
)

// counting counts the bytes read through it.
type counting struct {
	r io.Reader
	n int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestReadStopsOneByteAfterTheCap(t *testing.T) {
	const limit = 1 << 20
	var wire bytes.Buffer
	if _, err := gzipbomb.New(nil, 1<<30).WriteTo(&wire); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&wire)
	if err != nil {
		t.Fatal(err)
	}
	inflated := &counting{r: zr}
	_, err = read(inflated, limit, -1, nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	if inflated.n != limit+1 {
		t.Errorf("read %d bytes from the decompressor, want %d: the cap plus the byte that shows it passed", inflated.n, limit+1)
	}
}

func TestReadKeepsWhatFits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		size, limit int64
		hint        int64
		tooLarge    bool
	}{
		{"empty", 0, 10, -1, false},
		{"exactly the cap", 100_000, 100_000, -1, false},
		{"one over", 100_001, 100_000, -1, true},
		{"announced length", 70_000, 100_000, 70_000, false},
		{"announced short, body longer", 200_000, 100_000, 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Repeat("x", int(tc.size))
			got, err := read(strings.NewReader(body), tc.limit, tc.hint, nil)
			if tc.tooLarge {
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("err %v, want ErrTooLarge", err)
				}
				return
			}
			if err != nil || string(got) != body {
				t.Fatalf("got %d bytes (%v), want %d", len(got), err, len(body))
			}
			if int64(cap(got)) > tc.limit+1 {
				t.Errorf("buffer of %d bytes for a cap of %d", cap(got), tc.limit)
			}
		})
	}
}
