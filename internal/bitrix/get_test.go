package bitrix_test

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

func TestGetUsersStoresEveryPage(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 120, Seed: 1})
	st, err := v.engine().Get(v.ctx, bitrix.Users)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	var n int
	if err := v.pool.QueryRow(v.ctx, "SELECT count(*) FROM bitrix_records WHERE entity = 'users' AND status = 'NEW'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 120 {
		t.Errorf("%d NEW users, want 120", n)
	}
	t.Log(v.log.String())
}
