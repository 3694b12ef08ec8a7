package pgsession

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrFenced is the cause (errors.Is) of a write refused because its run no longer holds its
// lock: a later run of the same command took the lock over and recorded itself as its holder.
var ErrFenced = errors.New("this run no longer holds its lock: a later run took it over")

// FencedCode is the SQLSTATE the fence trigger (migration 00010) raises a refused write with.
const FencedCode = "IF001"

// A Fence makes the connections of a pool work for one run. The run that takes a lock records
// itself as its holder in run_locks (Claim); every write transaction on a fenced table checks
// that row, and holds a share lock on it until it ends (trigger ingest_fence, migration 00010).
// A later run's Claim waits for those transactions and, once committed, makes every later write
// of the old run fail with ErrFenced: a run that lost its lock commits nothing more, whatever
// it was doing when it lost it.
//
// A connection that never carried a run (a person's `ingest status set`, a migration, a test's
// pool) is not fenced.
type Fence struct {
	holder   atomic.Pointer[holder]
	onFenced atomic.Pointer[func(error)]
}

type holder struct {
	lock string
	run  int64
}

// customKey keeps, in a connection's CustomData, the holder it was last set to.
const customKey = "pgsession.fence"

// Hold makes every connection the pool hands out from now on work for run runID under lock.
func (f *Fence) Hold(lock string, runID int64) {
	f.holder.Store(&holder{lock: lock, run: runID})
}

// OnFenced makes the fence call fn with the error of every write it refuses, as the statement
// fails: the run stops at once even when the code that wrote goes on after the error (a
// per-record failure recorded and the next record tried).
func (f *Fence) OnFenced(fn func(error)) { f.onFenced.Store(&fn) }

// refused reports err to OnFenced's function when the fence refused the statement.
func (f *Fence) refused(err error) {
	var pg *pgconn.PgError
	if err == nil || !errors.As(err, &pg) || pg.Code != FencedCode {
		return
	}
	if fn := f.onFenced.Load(); fn != nil {
		(*fn)(&FencedError{Err: err})
	}
}

// TraceQueryStart is part of pgx.QueryTracer: the fence watches the ends of statements for
// the writes it refused.
func (f *Fence) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd reports a refused statement.
func (f *Fence) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	f.refused(d.Err)
}

// TraceBatchStart is part of pgx.BatchTracer.
func (f *Fence) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery reports a refused statement of a batch.
func (f *Fence) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	f.refused(d.Err)
}

// TraceBatchEnd reports a refused batch.
func (f *Fence) TraceBatchEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	f.refused(d.Err)
}

// TraceCopyFromStart is part of pgx.CopyFromTracer.
func (f *Fence) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return ctx
}

// TraceCopyFromEnd reports a refused COPY.
func (f *Fence) TraceCopyFromEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceCopyFromEndData) {
	f.refused(d.Err)
}

// prepare is the pool's PrepareConn: it sets the session's run, once per connection and run.
func (f *Fence) prepare(ctx context.Context, conn *pgx.Conn) (bool, error) {
	h := f.holder.Load()
	data := conn.PgConn().CustomData()
	if h == nil || data[customKey] == h {
		return true, nil
	}
	_, err := conn.Exec(ctx, `SELECT set_config('ingest.lock', $1, false), set_config('ingest.run', $2, false)`,
		h.lock, strconv.FormatInt(h.run, 10))
	if err != nil {
		if conn.IsClosed() {
			return false, nil // a dead connection: the pool tries another one
		}
		return false, fmt.Errorf("fence the connection to run %d: %w", h.run, err)
	}
	data[customKey] = h
	return true, nil
}

// Claim records runID as the holder of lock, in tx. The caller holds lock (the advisory lock):
// no other live run can claim it. The update waits for the write transactions of the previous
// holder still open (they hold a share lock on the row) and, once tx commits, fences out any
// later one.
func Claim(ctx context.Context, tx pgx.Tx, lock string, runID int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO run_locks (name, run_id) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET run_id = EXCLUDED.run_id, claimed_at = now()`, lock, runID)
	if err != nil {
		return fmt.Errorf("record run %d as the holder of lock %q: %w", runID, lock, Explain(err))
	}
	return nil
}

// ClaimPrefixed records runID as the holder of every lock already recorded whose name starts
// with prefix, in tx, as Claim does each (a family of locks whose names are not all known,
// such as "social sync shard I/N" for every N). A lock never recorded has no run to fence out:
// a run writes only once it has claimed its own.
func ClaimPrefixed(ctx context.Context, tx pgx.Tx, prefix string, runID int64) error {
	_, err := tx.Exec(ctx, `UPDATE run_locks SET run_id = $2, claimed_at = now() WHERE starts_with(name, $1)`, prefix, runID)
	if err != nil {
		return fmt.Errorf("record run %d as the holder of the locks %q...: %w", runID, prefix, Explain(err))
	}
	return nil
}

// Explain wraps the errors Postgres ends a statement or session with when one of the bounds or
// the fence stops it, saying what happened in the words of this program; other errors are
// returned as they are.
func Explain(err error) error {
	var pg *pgconn.PgError
	if err == nil || !errors.As(err, &pg) {
		return err
	}
	switch {
	case pg.Code == FencedCode:
		return &FencedError{Err: err}
	case pg.Code == "55P03": // lock_not_available
		what := pg.Where
		if what == "" {
			what = "a table or an advisory lock"
		}
		return fmt.Errorf("waited longer than lock_timeout for a lock another session held (%s): "+
			"see pg_stat_activity for the session that holds it: %w", what, err)
	case pg.Code == "57014" && pg.Message == "canceling statement due to statement timeout":
		return fmt.Errorf("a statement ran longer than statement_timeout: %w", err)
	case pg.Code == "25P03": // idle_in_transaction_session_timeout
		return fmt.Errorf("the server ended a transaction left idle longer than idle_in_transaction_session_timeout: %w", err)
	}
	return err
}

// FencedError is a write the fence refused: the run lost its lock to a later run.
type FencedError struct{ Err error }

func (e *FencedError) Error() string {
	var pg *pgconn.PgError
	if errors.As(e.Err, &pg) {
		return "write refused: " + pg.Message
	}
	return "write refused: " + e.Err.Error()
}

// Unwrap returns ErrFenced and the database's error.
func (e *FencedError) Unwrap() []error { return []error{ErrFenced, e.Err} }

// The fence is the pool connections' tracer (ConfigurePool).
var (
	_ pgx.QueryTracer    = (*Fence)(nil)
	_ pgx.BatchTracer    = (*Fence)(nil)
	_ pgx.CopyFromTracer = (*Fence)(nil)
)
