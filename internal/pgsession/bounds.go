// Package pgsession sets what every Postgres session of ingest carries: bounds that end a
// session whose peer is gone or a statement that waits too long (Bounds), and the fence of the
// run the session works for (Fence), so that a run which lost its lock commits nothing more.
package pgsession

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Bounds are the time limits a session sets on itself after connecting. A zero field leaves the
// server's setting alone (for the timeouts, Postgres's own default: no limit).
type Bounds struct {
	// DeadPeer is how long the server keeps the session of a client that stopped answering (a
	// lost node, a cut network): TCP keepalive probes and tcp_user_timeout on a TCP connection
	// (unix sockets ignore them). Without it the server's keepalive decides: about 2 h 11 min
	// with Linux's defaults, never behind a pooler.
	DeadPeer time.Duration
	// IdleSession ends a session idle outside a transaction for this long
	// (idle_session_timeout). Only the run lock's connection sets it: the lock must not outlive a
	// silent holder, whatever sits in between (a proxy, a half-open connection).
	IdleSession time.Duration
	// IdleInTransaction ends a session idle inside a transaction for this long
	// (idle_in_transaction_session_timeout), releasing its row locks. No transaction of ingest
	// waits on the network, so only a frozen or lost client ever reaches it.
	IdleInTransaction time.Duration
	// Lock is lock_timeout: a statement that waits this long for a lock fails with the lock it
	// waited on, instead of hanging while its run holds the run lock.
	Lock time.Duration
	// Statement is statement_timeout: the backstop for a statement that never ends.
	Statement time.Duration
}

// Defaults for every connection of the pool. DeadPeer matches the run lock's, so that a lost
// node's transactions end no later than its lock does; IdleInTransaction is shorter, so that a
// run taking over never waits on them; Lock is longer than IdleInTransaction, so that a run
// taking over waits out a lost run's last transaction instead of failing on it; Statement is far
// above the longest statement a healthy run makes (docs/benchmarks.md, "Statement times").
const (
	DefaultDeadPeer          = 45 * time.Second
	DefaultIdleInTransaction = 30 * time.Second
	DefaultLock              = 2 * time.Minute
	DefaultStatement         = 10 * time.Minute
)

// Defaults returns the bounds of a pool connection.
func Defaults() Bounds {
	return Bounds{DeadPeer: DefaultDeadPeer, IdleInTransaction: DefaultIdleInTransaction,
		Lock: DefaultLock, Statement: DefaultStatement}
}

// Apply sets the bounds on conn, in one round trip. They are set after connecting rather than
// as startup parameters, which poolers such as PgBouncer refuse.
func Apply(ctx context.Context, conn *pgx.Conn, b Bounds) error {
	var names, values []string
	add := func(name string, d time.Duration) {
		if d > 0 {
			names, values = append(names, name), append(values, fmt.Sprint(d.Milliseconds()))
		}
	}
	if d := b.DeadPeer; d > 0 {
		// The first probe after a third of d, then up to 3 more, a sixth of d apart: a silent
		// peer is given up within d, and tcp_user_timeout does the same for unacknowledged data.
		names = append(names, "tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")
		values = append(values, fmt.Sprint(max(1, int(d.Seconds()/3))), fmt.Sprint(max(1, int(d.Seconds()/6))), "3")
		add("tcp_user_timeout", d)
	}
	add("idle_session_timeout", b.IdleSession)
	add("idle_in_transaction_session_timeout", b.IdleInTransaction)
	add("lock_timeout", b.Lock)
	add("statement_timeout", b.Statement)
	if len(names) == 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, `SELECT set_config(n, v, false) FROM unnest($1::text[], $2::text[]) AS s(n, v)`,
		names, values); err != nil {
		return fmt.Errorf("set the session bounds (idle_session_timeout needs Postgres 14 or newer): %w", err)
	}
	return nil
}

// ConfigurePool makes every connection of the pool cfg builds set b when it connects and, when
// f is not nil, carry f's run before it is handed out and report the writes the fence refuses
// (see Fence; f is then the connections' pgx tracer).
func ConfigurePool(cfg *pgxpool.Config, b Bounds, f *Fence) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		return Apply(ctx, conn, b)
	}
	if f != nil {
		cfg.PrepareConn = f.prepare
		cfg.ConnConfig.Tracer = f
	}
}
