package bitrixfake

import (
	"strings"

	"github.com/ingest-dev/ingest/internal/fakes/gzipbomb"
)

// DefaultBombBytes is what a bomb inflates to when ServeGzipBombs is given no size: the 4 GiB
// of a 4 MB answer that was seen to take a client past its pod's 512 MiB.
const DefaultBombBytes = 4 << 30

// ServeGzipBombs makes every request for the REST method ("batch" for batches, "" for any) from
// now on answered 200 with a gzip body that inflates to inflated bytes (DefaultBombBytes when 0)
// and weighs about a thousandth of that: the opening of a JSON envelope, {"result":", then one
// never-ending string. A client that caps what it inflates fails that call quickly and cheaply;
// one that does not holds gigabytes. The returned bomb tells how much of it was sent.
func (p *Portal) ServeGzipBombs(method string, inflated int64) *gzipbomb.Bomb {
	if inflated <= 0 {
		inflated = DefaultBombBytes
	}
	b := gzipbomb.New([]byte(`{"result":"`), inflated)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bombs == nil {
		p.bombs = map[string]*gzipbomb.Bomb{}
	}
	p.bombs[strings.ToLower(method)] = b
	return b
}

// bombFor returns the bomb a request for method gets, nil for none; called with the lock held.
func (p *Portal) bombFor(method string) *gzipbomb.Bomb {
	for _, key := range []string{method, ""} {
		if b := p.bombs[key]; b != nil {
			p.stats.Faults++
			return b
		}
	}
	return nil
}

// StopGzipBombs answers every method normally again.
func (p *Portal) StopGzipBombs() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bombs = nil
}
