package bitrix_test

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/importapi"
)

func TestTokensStayOutOfErrorsLogsAndTheDatabase(t *testing.T) {
	t.Parallel()
	v := newEnv(t, bitrixfake.Options{Users: 70, Groups: 4, Seed: 41, Token: "portal0secret0token"})
	e := v.engine()

	// A wrong webhook: the get stops with a message naming the setting, not the token.
	srv := httptest.NewServer(v.portal)
	defer srv.Close()
	wrong, err := rest.New(srv.URL+"/rest/1/wrong0secret0token/", rest.Options{Logger: v.logger()})
	if err != nil {
		t.Fatal(err)
	}
	bad := v.engine(func(c *engine.Config) { c.Source = wrong })
	_, err = bad.Get(v.ctx, bitrix.Users)
	if err == nil || strings.Contains(err.Error(), "wrong0secret0token") || !strings.Contains(err.Error(), "BITRIX_WEBHOOK_URL") {
		t.Errorf("get with a wrong webhook = %v, want an error naming BITRIX_WEBHOOK_URL without the token", err)
	}

	// A wrong target token: set stops before touching any record.
	v.phases(e, bitrix.Users, "get")
	u, _ := url.Parse(v.client.Address())
	u.User = url.UserPassword("import", "wrong0target0token")
	target, err := importapi.New(u.String(), importapi.Options{Logger: v.logger()})
	if err != nil {
		t.Fatal(err)
	}
	bad = v.engine(func(c *engine.Config) { c.Target = target })
	_, err = bad.Set(v.ctx, bitrix.Users)
	if err == nil || strings.Contains(err.Error(), "wrong0target0token") || !strings.Contains(err.Error(), "TARGET_WEBHOOK_URL") {
		t.Errorf("set with a wrong target token = %v, want an error naming TARGET_WEBHOOK_URL without the token", err)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE status <> 'NEW'`); n != 0 {
		t.Errorf("%d records moved by a set the target refused as a whole", n)
	}

	v.phases(e, bitrix.Users, "set", "verify")
	v.phases(e, bitrix.Groups, "get", "set", "verify")
	var dump string
	err = v.pool.QueryRow(v.ctx, `SELECT concat_ws(' ',
    (SELECT string_agg(r::text, ' ') FROM bitrix_records r), (SELECT string_agg(p::text, ' ') FROM bitrix_page_log p),
    (SELECT string_agg(i::text, ' ') FROM bitrix_inventory i), (SELECT string_agg(m::text, ' ') FROM bitrix_id_map m),
    (SELECT string_agg(h::text, ' ') FROM status_history h))`).Scan(&dump)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"portal0secret0token", "wrong0secret0token", v.target.Token(), "wrong0target0token"} {
		if strings.Contains(dump, secret) {
			t.Errorf("a token is stored in the database")
		}
		if strings.Contains(v.log.String(), secret) {
			t.Errorf("a token is in the log")
		}
	}
}
