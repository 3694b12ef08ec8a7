package bitrix_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/httplimit"
)

// TestGzipBombFailsTheGetOnceAndARerunConverges: a portal answering with a gzip bomb fails the
// get with the cap in its error, asked once (not retried: the same request gets the same
// answer), with nothing stored from it; once the portal answers normally, a rerun stores every
// record.
func TestGzipBombFailsTheGetOnceAndARerunConverges(t *testing.T) {
	t.Parallel()
	const users = 120
	v := newEnv(t, bitrixfake.Options{Users: users, Seed: 1})
	v.portal.ServeGzipBombs("batch", 4<<30)
	v.portal.ServeGzipBombs("user.get", 4<<30)
	_, err := v.engine().Get(v.ctx, bitrix.Users)
	if !errors.Is(err, httplimit.ErrTooLarge) || !strings.Contains(err.Error(), "answer larger than 67108864 bytes") ||
		strings.Contains(err.Error(), v.portal.Token()) {
		t.Fatalf("get: %v, want the cap's error without the token", err)
	}
	if n := v.portal.Stats().Requests; n != 1 {
		t.Errorf("%d requests, want 1: an answer over the cap is not asked again", n)
	}
	if n := v.count(`SELECT count(*) FROM bitrix_records WHERE entity = 'users'`); n != 0 {
		t.Errorf("%d users stored from a bomb", n)
	}
	v.portal.StopGzipBombs()
	st, err := v.engine().Get(v.ctx, bitrix.Users)
	if err != nil || st.Of(bitrix.Users).Rows != users {
		t.Fatalf("rerun: %+v, %v; want all %d users", st, err, users)
	}
}
