package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/peterldowns/pgtestdb"
)

// templates holds, per server (its pgtestdb.Config's URL), the template pgtestdb migrated for
// this test process, as an instance's Config naming the template: pgtestdb keeps its own per
// process the same way, and a template's name is known only once pgtestdb has made a clone.
var templates sync.Map

// admins holds, per server, a pool on its maintenance database that creates and drops the
// process's clones (*pgxpool.Pool), open until the process ends. pgtestdb connects anew for
// each: a connection costs the server about 36 ms of CPU on the test machine (a fork and its
// page faults in the VM), two of them every test.
var admins sync.Map

// rememberTemplate records the template of inst, a database pgtestdb cloned on the server conf.
func rememberTemplate(conf pgtestdb.Config, inst pgtestdb.Config) {
	i := strings.Index(inst.Database, "_inst_")
	if i < 0 {
		return // not a clone's name: every database keeps coming from pgtestdb
	}
	inst.Database = inst.Database[:i]
	templates.LoadOrStore(conf.URL(), inst)
}

// templateOf returns the template remembered for the server conf.
func templateOf(conf pgtestdb.Config) (pgtestdb.Config, bool) {
	tpl, ok := templates.Load(conf.URL())
	if !ok {
		return pgtestdb.Config{}, false
	}
	return tpl.(pgtestdb.Config), true
}

// clone makes a database for t from the template tpl on the server conf, as pgtestdb does (its
// name, owner and URL; logged, kept when t fails, dropped otherwise), but with STRATEGY
// FILE_COPY where the server has it, and on the process's admin pool. PostgreSQL 15's default,
// WAL_LOG, writes every block of the template through the WAL and the shared buffers; FILE_COPY
// copies its files after a checkpoint. Measured on the test cluster (scripts/pg.sh, fsync off)
// with the 7.5 MB template: Postgres CPU of 30 tests that each take a database and query it once
// 6.3 to 7.4 s, against 13.9 to 16.8 s through pgtestdb (0.23 s a test instead of 0.5); their
// wall 8.4 to 9.5 s instead of 16 to 20. Create and drop alone: 2.6 CPU centiseconds a database
// instead of 7.
func clone(t testing.TB, conf pgtestdb.Config, tpl pgtestdb.Config) string {
	t.Helper()
	ctx := context.Background()
	base, err := admin(ctx, conf)
	if err != nil {
		t.Fatalf("could not connect to database: %s", err)
	}
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	inst := tpl
	inst.Database = tpl.Database + "_inst_" + hex.EncodeToString(id)
	query := "CREATE DATABASE " + pgx.Identifier{inst.Database}.Sanitize() +
		" TEMPLATE " + pgx.Identifier{tpl.Database}.Sanitize() + " OWNER " + pgx.Identifier{tpl.User}.Sanitize()
	if fileCopy(ctx, base) {
		query += " STRATEGY FILE_COPY"
	}
	if _, err := base.Exec(ctx, query); err != nil {
		t.Fatalf("failed to create instance from template %s: %s", tpl.Database, err)
	}
	t.Logf("testdbconf: %s", inst.URL())
	t.Cleanup(func() {
		if t.Failed() {
			return // kept for inspection
		}
		// Tests that kill processes mid-run leave connections behind by design.
		if _, err := base.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = $1 AND pid <> pg_backend_pid()`, inst.Database); err != nil {
			t.Fatalf("could not terminate open connections on database %s: %s", inst.Database, err)
		}
		if _, err := base.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{inst.Database}.Sanitize()); err != nil {
			t.Fatalf("could not drop test database %s: %s", inst.Database, err)
		}
	})
	return inst.URL()
}

// admin returns the pool of admins for the server conf, opening it on first use.
func admin(ctx context.Context, conf pgtestdb.Config) (*pgxpool.Pool, error) {
	if p, ok := admins.Load(conf.URL()); ok {
		return p.(*pgxpool.Pool), nil
	}
	cfg, err := pgxpool.ParseConfig(conf.URL())
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 2 // a CREATE DATABASE waits on checkpoints: a drop may run beside it
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if prev, loaded := admins.LoadOrStore(conf.URL(), p); loaded {
		p.Close()
		return prev.(*pgxpool.Pool), nil
	}
	return p, nil
}

// fileCopy reports whether the server has CREATE DATABASE's STRATEGY (PostgreSQL 15 and later).
func fileCopy(ctx context.Context, base *pgxpool.Pool) bool {
	var v int
	return base.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v) == nil && v >= 150000
}
