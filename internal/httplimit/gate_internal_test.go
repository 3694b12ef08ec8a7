package httplimit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// watched is a body that counts, across all bodies of a test, how many are being read and how
// many have passed the gate's small size (which only a reader holding the large slot can do:
// its buffer must have grown past small first).
type watched struct {
	r                    io.Reader
	n, small             int64
	reading, large       *atomic.Int64
	maxReading, maxLarge *atomic.Int64
	started, passed      bool
}

func (w *watched) Read(p []byte) (int, error) {
	if !w.started {
		w.started = true
		raise(w.maxReading, w.reading.Add(1))
	}
	runtime.Gosched() // let the other readers run
	n, err := w.r.Read(p)
	w.n += int64(n)
	if w.n > w.small && !w.passed {
		w.passed = true
		raise(w.maxLarge, w.large.Add(1))
	}
	if err != nil {
		w.reading.Add(-1)
		if w.passed {
			w.large.Add(-1)
		}
	}
	return n, err
}

func (w *watched) Close() error { return nil }

func raise(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

func TestGateBoundsReadersAndLargeAnswers(t *testing.T) {
	const readers, small = 3, 64 << 10
	g := NewGate(readers, small)
	var reading, large, maxReading, maxLarge atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		size := 32 << 10 // small answers
		if i%2 == 0 {
			size = 1 << 20 // large ones, under the cap
		}
		wg.Go(func() {
			body := &watched{r: strings.NewReader(strings.Repeat("x", size)), small: small,
				reading: &reading, large: &large, maxReading: &maxReading, maxLarge: &maxLarge}
			got, err := g.ReadBody(context.Background(), &http.Response{Body: body, ContentLength: -1, Header: http.Header{}}, 2<<20, "GET /")
			if err == nil && len(got) != size {
				err = errors.New("short body")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if maxReading.Load() > readers || maxLarge.Load() > 1 {
		t.Errorf("%d answers read at once (gate: %d), %d past the small size at once (gate: 1)", maxReading.Load(), readers, maxLarge.Load())
	}
	if maxReading.Load() < 2 {
		t.Errorf("answers were never read side by side (%d at most): the test shows nothing", maxReading.Load())
	}
}

func TestGateWaitEndsWithTheContext(t *testing.T) {
	g := NewGate(1, 1<<10)
	g.readers <- struct{}{} // another reader holds the only slot
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.ReadBody(ctx, &http.Response{Body: io.NopCloser(strings.NewReader("x")), Header: http.Header{}}, 10, "GET /")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}
