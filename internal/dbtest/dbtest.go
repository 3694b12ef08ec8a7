// Package dbtest gives tests a fresh, migrated Postgres database of their own.
//
// The server comes from TEST_DATABASE_URL (set by `make test`, which starts a throwaway cluster
// with scripts/pg.sh). Databases are cloned from a template migrated once per schema version
// (pgtestdb), so a new database costs tens of milliseconds. A failed test keeps its database and
// logs its URL for inspection.
package dbtest

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver pgtestdb uses
	"github.com/peterldowns/pgtestdb"
	"github.com/peterldowns/pgtestdb/migrators/goosemigrator"

	"github.com/ingest-dev/ingest/migrations"
)

// EnvURL names the environment variable holding the test server's URL.
const EnvURL = "TEST_DATABASE_URL"

// URL returns a connection URL for a new, migrated database for t.
//
// Without TEST_DATABASE_URL the test is skipped, unless CI is set, where it fails: CI must never
// pass by skipping the database tests.
func URL(t testing.TB) string {
	t.Helper()
	raw := ServerURL(t)
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	conf := pgtestdb.Config{
		DriverName: "pgx",
		User:       cfg.User,
		Password:   cfg.Password,
		Database:   cfg.Database,
		Port:       strconv.Itoa(int(cfg.Port)),
		Options:    "sslmode=disable",
		// Tests that kill processes mid-run leave connections behind by design.
		ForceTerminateConnections: true,
	}
	if len(cfg.Host) > 0 && cfg.Host[0] == '/' {
		conf.Options += "&host=" + cfg.Host // unix socket directory
	} else {
		conf.Host = cfg.Host
	}
	migrator := goosemigrator.New(".", goosemigrator.WithFS(migrations.FS))
	return pgtestdb.Custom(t, conf, migrator).URL()
}

// ServerURL returns the test server's URL itself, for tests that make databases of their own
// (an empty one, say). It skips or fails the test like URL when there is none.
func ServerURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvURL)
	if raw == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; run the tests with `make test`", EnvURL)
		}
		t.Skipf("%s is not set; run `make test` to start a throwaway Postgres", EnvURL)
	}
	return raw
}

// Pool returns a pool on a new, migrated database for t, closed when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), URL(t))
	if err != nil {
		t.Fatalf("connect test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
