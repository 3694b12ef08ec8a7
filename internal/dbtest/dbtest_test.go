package dbtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A URL's options reach the test databases as given: nothing forces sslmode off.
func TestServerConfigKeepsOptions(t *testing.T) {
	conf, err := serverConfig("postgres://u:pw@db.example:6543/postgres?sslmode=verify-full&application_name=x")
	if err != nil {
		t.Fatal(err)
	}
	if conf.Host != "db.example" || conf.Port != "6543" || conf.User != "u" || conf.Password != "pw" {
		t.Errorf("conf = %+v", conf)
	}
	if conf.Options != "application_name=x&sslmode=verify-full" {
		t.Errorf("options = %q, want the URL's own", conf.Options)
	}
	sock, err := serverConfig("postgres://postgres@/postgres?host=/tmp/pg&port=5433")
	if err != nil {
		t.Fatal(err)
	}
	if sock.Host != "" || sock.Port != "5433" || sock.Options != "host=%2Ftmp%2Fpg" {
		t.Errorf("unix socket conf = %+v", sock)
	}
	if strings.Contains(sock.Options, "sslmode") {
		t.Errorf("sslmode forced: %q", sock.Options)
	}
	if _, err := serverConfig("host=/tmp/pg dbname=postgres"); err == nil {
		t.Error("a keyword/value string was taken for a URL")
	}
}

// DropTemplates drops the templates of its prefix, and neither a clone kept by a failed test
// nor another prefix's template.
func TestDropTemplates(t *testing.T) {
	server := ServerURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A prefix of this test's own: the real templates are shared with the tests running now.
	prefix := fmt.Sprintf("dbtest_drop_%d_", time.Now().UnixNano())
	tpl, clone, other := prefix+"tpl", prefix+"tpl_inst_1", prefix[:len(prefix)-1]+"x_tpl"
	for _, name := range []string{tpl, clone, other} {
		id := pgx.Identifier{name}.Sanitize()
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = conn.Exec(context.Background(), "ALTER DATABASE "+id+" IS_TEMPLATE false")
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+id)
		})
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+id+" IS_TEMPLATE true"); err != nil {
			t.Fatal(err)
		}
	}
	dropped, err := DropTemplates(ctx, server, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []string{tpl}) {
		t.Errorf("dropped %v, want [%s]", dropped, tpl)
	}
	var left []string
	rows, _ := conn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1", prefix[:len(prefix)-1])
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(left, []string{clone, other}) {
		t.Errorf("left %v, want [%s %s]", left, clone, other)
	}
}

// The databases after a process's first are cloned here (clone.go): each a database of its
// own, migrated as the first, and dropped when its test passes.
func TestURLClonesMigratedDatabases(t *testing.T) {
	ctx := context.Background()
	var names []string
	for i := 0; i < 3; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			conn, err := pgx.Connect(ctx, URL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var name string
			var version int64
			if err := conn.QueryRow(ctx, `SELECT current_database(), (SELECT max(version_id) FROM goose_db_version)`).Scan(&name, &version); err != nil {
				t.Fatal(err)
			}
			if version == 0 {
				t.Errorf("%s is not migrated", name)
			}
			names = append(names, name)
		})
	}
	if len(names) != 3 || names[0] == names[1] || names[1] == names[2] || names[0] == names[2] {
		t.Fatalf("databases %v, want three of their own", names)
	}
	conn, err := pgx.Connect(ctx, ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = ANY($1)`, names).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of the passed tests' databases were kept", left)
	}
}
