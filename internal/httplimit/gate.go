package httplimit

import (
	"context"
	"net/http"
)

// Gate bounds the memory that answers being read take at once, however many requests a client
// has in flight: a cap per answer alone lets n requests hold n caps. At most readers answers are
// read at once, each free to grow its buffer to small bytes; past that a reader needs the one
// large slot, so only one answer at a time grows towards its cap. Reading then holds at most
// about 1.5 times readers*small plus 1.5 times the cap (ReadBody's buffer doubling). A reader
// waits for the large slot holding only its own small one, never the other way round, so
// readers cannot wait for each other in a cycle.
type Gate struct {
	readers chan struct{}
	large   chan struct{}
	small   int64
}

// NewGate returns a gate for readers answers at once of up to small bytes each, and one larger.
func NewGate(readers int, small int64) *Gate {
	return &Gate{readers: make(chan struct{}, max(readers, 1)), large: make(chan struct{}, 1), small: small}
}

// ReadBody is the package's ReadBody under the gate; it waits for its slots or for ctx to end.
// A nil Gate does not wait.
func (g *Gate) ReadBody(ctx context.Context, resp *http.Response, limit int64, call string) ([]byte, error) {
	if g == nil {
		return ReadBody(resp, limit, call)
	}
	if err := acquire(ctx, g.readers); err != nil {
		return nil, err
	}
	defer func() { <-g.readers }()
	large := false
	defer func() {
		if large {
			<-g.large
		}
	}()
	return readBody(resp, limit, call, func(size int64) error {
		if size <= g.small || large {
			return nil
		}
		if err := acquire(ctx, g.large); err != nil {
			return err
		}
		large = true
		return nil
	})
}

func acquire(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
