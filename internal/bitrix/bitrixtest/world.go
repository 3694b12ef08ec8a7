package bitrixtest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/crashtest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
)

// world is one database and one target the child migrates into.
type world struct {
	dbURL  string
	target *targetfake.Server
	addr   string   // TARGET_WEBHOOK_URL
	env    []string // more of the child's environment (Case.Env)
	writes *writeKiller
}

func newWorld(t *testing.T, c Case) *world {
	t.Helper()
	w := &world{dbURL: dbtest.URL(t), target: targetfake.New(targetfake.Options{StableIDs: true, Latency: c.TargetLatency,
		MethodLatency: c.TargetMethodLatency}), env: c.Env, writes: &writeKiller{}}
	srv := httptest.NewServer(w.writes.wrap(w.target))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL + "/api/")
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("import", w.target.Token())
	w.addr = u.String()
	return w
}

// start starts the child on the world's database and target, reading the portal at webhook:
// the phases given (every one when none) of each of the entities' commands, in order.
func (w *world) start(t *testing.T, bin, webhook string, entities, phases []string) *crashtest.Child {
	t.Helper()
	return crashtest.Start(t, bin, append([]string{"BITRIX_CRASH_DB=" + w.dbURL, "BITRIX_CRASH_PORTAL=" + webhook,
		"BITRIX_CRASH_TARGET=" + w.addr, "BITRIX_CRASH_ENTITIES=" + strings.Join(entities, ","),
		"BITRIX_CRASH_PHASES=" + strings.Join(phases, ",")}, w.env...)...)
}

// rows returns a query's rows as text, one string a row.
func (w *world) rows(t *testing.T, q string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		vals, err := row.Values()
		return strings.TrimSuffix(fmt.Sprintln(vals...), "\n"), err
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}
