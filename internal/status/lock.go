package status

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/pgsession"
)

// ErrLocked is returned (wrapped in a *LockedError) when another run holds the lock.
var ErrLocked = errors.New("another run holds the lock")

// ErrLockLost is the cause a run's context is cancelled with when its lock connection dies.
var ErrLockLost = errors.New("lost the run lock: the lock connection to Postgres is gone")

// LockedError says which run holds the lock, as far as Postgres knows.
type LockedError struct {
	// Name is the lock that could not be taken.
	Name string
	// For is the run's own lock when Name is another lock of its set (LockOptions.Also): the
	// run was refused because of a different command.
	For string
	// Excludes is the lock of the run's set whose Refuses names Name: the run was refused
	// because another run holds Name, not because Name could not be taken.
	Excludes string
	Holder   string // application_name of the holders' connections, e.g. "ingest extract habr (host-1 pid 42)"
	Since    time.Time
}

func (e *LockedError) Error() string {
	holder := ""
	if e.Holder != "" {
		holder = fmt.Sprintf(" (%s, connected since %s)", e.Holder, e.Since.UTC().Format(time.RFC3339))
	}
	if e.Excludes != "" {
		return fmt.Sprintf("`ingest %s` cannot run now: another run holds the lock %q, which its lock %q excludes%s; this run exits without doing anything",
			e.For, e.Name, e.Excludes, holder)
	}
	if e.For != "" && e.For != e.Name {
		return fmt.Sprintf("`ingest %s` cannot run now: the lock %q it needs is held by another run%s; this run exits without doing anything",
			e.For, e.Name, holder)
	}
	return fmt.Sprintf("another `ingest %s` is already running%s; this run exits without doing anything", e.Name, holder)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a Postgres session advisory lock held on a connection of its own for a whole run.
// Session locks belong to the backend: when the process dies the connection closes and Postgres
// frees the lock, so a crashed run never blocks the next one.
type Lock struct {
	name string
	// keys are every lock of the set it holds, its own first.
	keys []int64
	conn *pgx.Conn
	// deadPeer is the server's bound on this session's silence (LockOptions.DeadPeerTimeout):
	// a check unanswered for that long finds a session the server has ended.
	deadPeer time.Duration
}

// LockKey is the advisory lock key for a command name ("extract habr"): 64-bit FNV-1a of
// "ingest:" + name, so commands never collide with each other and rarely with anything else.
func LockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("ingest:" + name))
	return int64(h.Sum64())
}

// DefaultDeadPeerTimeout is how long the server keeps a lock whose holder has stopped talking
// (node lost, network cut) before it ends the session and frees the lock. Without it the
// server's TCP keepalive (tcp_keepalives_idle, 2 h by default) decides, and every later run
// exits 75 until then.
const DefaultDeadPeerTimeout = pgsession.DefaultDeadPeer

// LockOptions tune AcquireLockWith.
type LockOptions struct {
	// DeadPeerTimeout bounds how long the server keeps the lock of a holder that went silent:
	// the session's idle_session_timeout, and its TCP keepalive and tcp_user_timeout on a TCP
	// connection. The holder must talk to the server more often than that (Watch does);
	// DefaultDeadPeerTimeout when zero.
	DeadPeerTimeout time.Duration
	// Also are more locks the run takes with its own, on the same connection and all or none:
	// a lock set. A lock several commands take shared keeps them from running while a command
	// that takes it exclusive runs, and the other way round, while the shared holders still
	// run side by side (every `bitrix ENTITY PHASE` takes "bitrix" shared, `bitrix migrate`
	// exclusive).
	Also []SetLock
}

// SetLock is one more lock of a run's lock set.
type SetLock struct {
	Name string
	// Shared takes it in shared mode: other shared holders are let in, exclusive ones are not.
	Shared bool
	// Refuses are locks whose holders keep the set from being taken: once the whole set is
	// held, a lock of Refuses held by another session refuses the run. Runs that take one of a
	// family of locks shared ("social sync shards 4") and refuse the others ("social sync
	// shards 2", ...) run beside the holders of their own and never beside another's, which
	// shared and exclusive modes alone cannot say.
	Refuses []string
}

// AcquireLock is AcquireLockWith with the default options.
func AcquireLock(ctx context.Context, cfg *pgx.ConnConfig, name string) (*Lock, error) {
	return AcquireLockWith(ctx, cfg, name, LockOptions{})
}

// AcquireLockWith opens a dedicated connection and takes the lock for name, and the locks of
// o.Also, without waiting; then it checks that no other session holds a lock of their Refuses.
// It returns a *LockedError (errors.Is(err, ErrLocked)) naming the lock and its holders when
// another session holds one of them; it then holds none.
func AcquireLockWith(ctx context.Context, cfg *pgx.ConnConfig, name string, o LockOptions) (*Lock, error) {
	cfg = cfg.Copy()
	host, _ := os.Hostname()
	cfg.RuntimeParams["application_name"] = fmt.Sprintf("ingest %s (%s pid %d)", name, host, os.Getpid())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lock %q: connect: %w", name, err)
	}
	if err := setDeadPeerTimeout(ctx, conn, o.DeadPeerTimeout); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("lock %q: %w", name, err)
	}
	dead := o.DeadPeerTimeout
	if dead <= 0 {
		dead = DefaultDeadPeerTimeout
	}
	l := &Lock{name: name, conn: conn, deadPeer: dead}
	for _, s := range append([]SetLock{{Name: name}}, o.Also...) {
		fn := "pg_try_advisory_lock"
		if s.Shared {
			fn = "pg_try_advisory_lock_shared"
		}
		key := LockKey(s.Name)
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT "+fn+"($1)", key).Scan(&ok); err != nil {
			freeAndClose(ctx, conn)
			return nil, fmt.Errorf("lock %q: %w", s.Name, err)
		}
		if !ok {
			lerr := &LockedError{Name: s.Name, For: name}
			// Best effort: name the holders so the person reading the log knows where to look.
			_ = conn.QueryRow(ctx, `SELECT string_agg(DISTINCT a.application_name, ', '), min(a.backend_start) FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid <> pg_backend_pid()
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND ((l.classid::bigint << 32) | l.objid::bigint) = $1 HAVING count(*) > 0`, key).Scan(&lerr.Holder, &lerr.Since)
			freeAndClose(ctx, conn)
			return nil, lerr
		}
		l.keys = append(l.keys, key)
	}
	if lerr, err := refusedBy(ctx, conn, o.Also); err != nil || lerr != nil {
		freeAndClose(ctx, conn)
		if err != nil {
			return nil, fmt.Errorf("lock %q: %w", name, err)
		}
		lerr.For = name
		return nil, lerr
	}
	return l, nil
}

// freeAndClose gives back every lock of a set that was refused before closing its connection:
// the server frees a closed session's locks only once its backend has ended, a moment after
// the client let go, and the refused run's caller may retry at once.
func freeAndClose(ctx context.Context, conn *pgx.Conn) {
	ctx = context.WithoutCancel(ctx)
	_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock_all()")
	conn.Close(ctx)
}

// refusedBy returns the refusal of the first lock of set's Refuses that another session of
// this database holds, nil when none is held. It runs once the whole set is held: of two runs
// that refuse each other's lock and start together, each takes its own before it looks for
// the other's, so whichever looks second finds the other's lock held: at least one of them
// is refused (both may be, and retry later), never neither.
func refusedBy(ctx context.Context, conn *pgx.Conn, set []SetLock) (*LockedError, error) {
	type refusal struct{ name, by string }
	byKey := map[int64]refusal{}
	var keys []int64
	for _, s := range set {
		for _, name := range s.Refuses {
			k := LockKey(name)
			if _, dup := byKey[k]; !dup {
				byKey[k] = refusal{name: name, by: s.Name}
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	// Advisory locks belong to a database: a holder in another database refuses nothing.
	rows, err := conn.Query(ctx, `SELECT k, coalesce(string_agg(DISTINCT a.application_name, ', '), ''), min(a.backend_start)
FROM pg_locks l CROSS JOIN LATERAL (SELECT (l.classid::bigint << 32) | l.objid::bigint AS k) key
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid <> pg_backend_pid()
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND k = ANY($1)
GROUP BY k`, keys)
	if err != nil {
		return nil, fmt.Errorf("look for the holders of the locks the set refuses: %w", err)
	}
	held := map[int64]*LockedError{}
	var k int64
	var holder string
	var since *time.Time
	if _, err := pgx.ForEachRow(rows, []any{&k, &holder, &since}, func() error {
		e := &LockedError{Name: byKey[k].name, Excludes: byKey[k].by, Holder: holder}
		if since != nil {
			e.Since = *since
		}
		held[k] = e
		return nil
	}); err != nil {
		return nil, fmt.Errorf("look for the holders of the locks the set refuses: %w", err)
	}
	for _, k := range keys { // the first in the set's order, whatever order the server gave
		if e := held[k]; e != nil {
			return e, nil
		}
	}
	return nil, nil
}

// setDeadPeerTimeout makes the server end the lock's session when its holder goes silent for d,
// on this connection only. idle_session_timeout does it whatever sits in between (a proxy that
// keeps the TCP connection open, a half-open connection); the TCP settings end it sooner on a
// direct TCP connection to a vanished host (they are ignored on a unix socket). The other bounds
// are every connection's (pgsession.Defaults).
func setDeadPeerTimeout(ctx context.Context, conn *pgx.Conn, d time.Duration) error {
	if d <= 0 {
		d = DefaultDeadPeerTimeout
	}
	b := pgsession.Defaults()
	b.DeadPeer, b.IdleSession = d, d
	return pgsession.Apply(ctx, conn, b)
}

// Check verifies the lock connection is alive and still holds every lock of its set.
func (l *Lock) Check(ctx context.Context) error {
	var held bool
	err := l.conn.QueryRow(ctx, `SELECT count(DISTINCT (classid::bigint << 32) | objid::bigint) = cardinality($1::bigint[])
FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted AND objsubid = 1
  AND ((classid::bigint << 32) | objid::bigint) = ANY($1)`, l.keys).Scan(&held)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLockLost, err)
	}
	if !held {
		return ErrLockLost
	}
	return nil
}

// Watch checks the lock every interval until ctx ends, calling lost once if the lock is gone.
// The lock's connection is used by Watch alone until Release, which must be called after ctx
// ends and Watch has returned.
//
// A check may take longer than interval on a loaded server; it is given the lock's dead-peer
// bound, not the interval. Cancelling a query closes pgx's connection, and with it the lock: a
// deadline as short as the interval would end a live lock on a busy machine, which is the very
// loss the check exists to notice. An answer that has not come within the dead-peer bound
// comes from a session the server has ended anyway.
func (l *Lock) Watch(ctx context.Context, interval time.Duration, lost func(error)) {
	watch(ctx, interval, max(l.deadPeer, interval), l.Check, lost)
}

// watch is Watch's loop over any check: every interval, one check with timeout; the first
// failure while ctx lives is reported to lost and ends the loop. A slow check delays the next
// one instead of overlapping it.
func watch(ctx context.Context, interval, timeout time.Duration, check func(context.Context) error, lost func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, timeout)
			err := check(cctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				lost(err)
				return
			}
		}
	}
}

// Release unlocks and closes the lock connection. It runs even when ctx is already cancelled
// (a stopping run still releases its lock).
func (l *Lock) Release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := l.conn.Exec(ctx, "SELECT pg_advisory_unlock_all()")
	// Closing the connection frees the lock even if the unlock failed.
	cerr := l.conn.Close(ctx)
	return errors.Join(err, cerr)
}
