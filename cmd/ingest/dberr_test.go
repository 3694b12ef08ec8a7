package main

import (
	"net"
	"strings"
	"sync"
	"testing"
)

func TestDatabaseURLOfAnotherDatabaseNamesItsScheme(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"mysql://root@localhost/db", "the scheme mysql://, not Postgres's: want postgres:// or postgresql://"},
		{"  sqlite://file.db", "the scheme sqlite://"},
		{"postgres://u:pw@h/db", ""},
		{"postgresql://u@h/db", ""},
		{"POSTGRES://u@h/db", ""},
		{"host=h dbname=db password=a://b", ""},
	} {
		err := checkDBScheme(c.dsn)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("checkDBScheme(%q) = %v, want nil", c.dsn, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("checkDBScheme(%q) = %v, want %q", c.dsn, err, c.want)
		}
	}
	t.Setenv("LOG_FORMAT", "json")
	t.Setenv("DATABASE_URL", "mysql://root:Pw9secret@localhost/db")
	code, _, stderr := mainOut(t, "status")
	if code != exitConfig || !strings.Contains(stderr, "scheme mysql://") || strings.Contains(stderr, "Pw9secret") {
		t.Errorf("ingest status with a mysql:// URL = exit %d: %s", code, stderr)
	}
}

// TestSilentPostgresNamesTheConnectTimeout connects to a server that accepts TCP and never
// answers: the error names the timeout, its length and the host, not a bare deadline.
func TestSilentPostgresNamesTheConnectTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	t.Setenv("LOG_FORMAT", "json")
	t.Setenv("DATABASE_URL", "postgres://ingest:Pw9secret@"+l.Addr().String()+"/x?connect_timeout=1&sslmode=disable")
	code, _, stderr := mainOut(t, "status")
	want := l.Addr().String() + " did not answer within the connect timeout (1s"
	if code != exitFailed || !strings.Contains(stderr, want) || strings.Contains(stderr, "Pw9secret") {
		t.Errorf("ingest status against a silent server = exit %d: %s\nwant %q", code, stderr, want)
	}
}
