// Package migrations holds the goose SQL migrations of the ingest schema, embedded in the binary,
// and applies them with goose's Provider under a Postgres session advisory lock so that two
// `ingest migrate` runs (the migration init containers of two CronJob pods) never interleave.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// FS is the embedded migration files, named NNNNN_name.sql.
//
//go:embed *.sql
var FS embed.FS

// lockID keys goose's migration advisory lock; distinct from goose's default so that another
// goose-managed schema in the same database does not block ours.
const lockID = 0x696e67657374 // "ingest"

// NewProvider returns a goose provider over the embedded migrations for the pool's database.
// The returned *sql.DB shares the pool's connections; close it when done.
func NewProvider(pool *pgxpool.Pool, log *slog.Logger) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migration locker: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true)}
	if log != nil {
		opts = append(opts, goose.WithSlog(log))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS, opts...)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migration provider: %w", err)
	}
	return p, db, nil
}

// Up applies every pending migration and returns how many were applied.
func Up(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (int, error) {
	p, db, err := NewProvider(pool, log)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("migrate up: %w", err)
	}
	return len(res), nil
}

// Versions are the schema version a database is at and the newest one this binary embeds.
type Versions struct {
	// Database is the newest migration applied to the database; 0 when none (a fresh database).
	Database int64
	// Binary is the newest migration embedded in this binary.
	Binary int64
	// Pending is true when some embedded migration is not applied (a fresh or older schema).
	Pending bool
}

// Check reads where the database's schema stands against the binary without taking the
// migration lock, so it never waits for a running `ingest migrate`. On a fresh database it
// creates nothing (goose would create its version table).
func Check(ctx context.Context, pool *pgxpool.Pool) (Versions, error) {
	var v Versions
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('goose_db_version') IS NOT NULL").Scan(&exists); err != nil {
		return v, fmt.Errorf("check schema version: %w", err)
	}
	p, db, err := NewProvider(pool, nil)
	if err != nil {
		return v, err
	}
	defer db.Close()
	sources := p.ListSources()
	if len(sources) > 0 {
		v.Binary = sources[len(sources)-1].Version
	}
	if !exists {
		v.Pending = v.Binary > 0
		return v, nil
	}
	if v.Database, _, err = p.GetVersions(ctx); err != nil {
		return v, fmt.Errorf("check schema version: %w", err)
	}
	if v.Database > v.Binary {
		// goose cannot judge pending migrations against versions it does not know.
		return v, nil
	}
	if v.Pending, err = p.HasPending(ctx); err != nil {
		return v, fmt.Errorf("check migrations: %w", err)
	}
	return v, nil
}
