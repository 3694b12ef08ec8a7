// Package migrations holds the goose SQL migrations of the ingest schema, embedded in the binary,
// and applies them with goose's Provider under a Postgres session advisory lock so that two
// `ingest migrate` runs (or a migration Job racing a CronJob) never interleave.
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

// Pending reports whether the database lacks any embedded migration. Commands other than
// `migrate` refuse to run on an outdated schema rather than fail half-way through.
func Pending(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	p, db, err := NewProvider(pool, nil)
	if err != nil {
		return false, err
	}
	defer db.Close()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check migrations: %w", err)
	}
	return pending, nil
}
