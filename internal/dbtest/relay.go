package dbtest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Relay is a TCP proxy between a test and its database, for network faults: Freeze stops
// forwarding while every connection stays open (a host that vanished behind a proxy, a
// partition), Cut closes everything and refuses new connections (the server is down), Resume
// forwards again.
type Relay struct {
	ln     net.Listener
	dial   func() (net.Conn, error)
	target *pgconn.Config
	query  string // dbURL's options but host and port

	mu     sync.Mutex
	state  relayState
	change *sync.Cond
	conns  map[net.Conn]bool
}

type relayState int

const (
	relayForwarding relayState = iota
	relayFrozen
	relayCut
)

// NewRelay starts a relay on a loopback port in front of the database at dbURL (a unix socket
// or a TCP address), stopped when the test ends.
func NewRelay(t testing.TB, dbURL string) *Relay {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("relay: parse %s: %v", dbURL, err)
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	var query string
	if u, err := url.Parse(dbURL); err == nil {
		q := u.Query()
		q.Del("host")
		q.Del("port")
		query = q.Encode()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("relay: listen: %v", err)
	}
	r := &Relay{ln: ln, target: cfg, query: query, conns: map[net.Conn]bool{},
		dial: func() (net.Conn, error) { return net.Dial(network, addr) }}
	r.change = sync.NewCond(&r.mu)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

// URL is dbURL with the relay as its host, and dbURL's options (sslmode, ...) as they were.
func (r *Relay) URL() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(r.target.User, r.target.Password),
		Host: r.ln.Addr().String(), Path: "/" + r.target.Database, RawQuery: r.query}
	return u.String()
}

// Freeze stops forwarding bytes in both directions; connections stay open and new ones are
// accepted but get nothing through.
func (r *Relay) Freeze() { r.set(relayFrozen) }

// Cut closes every connection and refuses new ones until Resume.
func (r *Relay) Cut() {
	r.set(relayCut)
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		c.Close()
	}
}

// Resume forwards again (connections closed by Cut stay closed).
func (r *Relay) Resume() { r.set(relayForwarding) }

func (r *Relay) set(s relayState) {
	r.mu.Lock()
	r.state = s
	r.mu.Unlock()
	r.change.Broadcast()
}

func (r *Relay) close() {
	r.ln.Close()
	r.Cut()
}

func (r *Relay) accept() {
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return // listener closed
		}
		r.mu.Lock()
		cut := r.state == relayCut
		r.mu.Unlock()
		if cut {
			client.Close()
			continue
		}
		server, err := r.dial()
		if err != nil {
			client.Close()
			continue
		}
		r.mu.Lock()
		r.conns[client], r.conns[server] = true, true
		r.mu.Unlock()
		go r.pipe(client, server)
		go r.pipe(server, client)
	}
}

// pipe copies from src to dst, holding each chunk back while the relay is frozen.
func (r *Relay) pipe(src, dst net.Conn) {
	defer func() {
		src.Close()
		dst.Close()
		r.mu.Lock()
		delete(r.conns, src)
		delete(r.conns, dst)
		r.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			for r.state == relayFrozen {
				r.change.Wait()
			}
			cut := r.state == relayCut
			r.mu.Unlock()
			if cut {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
