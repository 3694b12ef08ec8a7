package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/jackc/pgx/v5"
	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/status"
)

// BenchmarkStoreUsers stores one full request's worth of new users (2,450 rows, as a range of
// get brings them) in one transaction: decoding them (checksums, dates) and saving them. It
// reports the two apart, per row.
func BenchmarkStoreUsers(b *testing.B) {
	const n = 2450
	portal := bitrixfake.New(bitrixfake.Options{Users: n, Seed: 61})
	srv := httptest.NewServer(portal)
	defer srv.Close()
	src, err := rest.New(srv.URL+portal.WebhookPath(), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1)})
	if err != nil {
		b.Fatal(err)
	}
	var rows []json.RawMessage
	scan := testUsers().Lister.(*IDScan).Scan
	if err := src.ListByID(context.Background(), scan, "0", func(p rest.Page) error { rows = append(rows, p.Rows...); return nil }); err != nil {
		b.Fatal(err)
	}
	pool := dbtest.Pool(b)
	ent := testUsers()
	ctx := context.Background()
	var decode, save time.Duration
	for i := range b.N {
		t0 := time.Now()
		recs, _, err := decodeRows(ent, rows, time.UTC)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for j := range recs {
				recs[j].sourceID = recs[j].sourceID + ":" + string(rune('a'+i%26)) + time.Now().Format("150405.000000")
			}
			_, err := NewStore(tx).saveRecords(ctx, ent.Name, recs, status.Change{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		decode, save = decode+t1.Sub(t0), save+time.Since(t1)
	}
	b.ReportMetric(float64(decode.Microseconds())/float64(b.N*n), "decode_us/row")
	b.ReportMetric(float64(save.Microseconds())/float64(b.N*n), "save_us/row")
}

// A record stored by someone else between the look-up and the insert does not fail the page:
// the copy gives way to an insert that skips it.
func TestInsertRecordsSkipsRecordsAlreadyStored(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	recs := []Incoming{
		{sourceID: "1", payload: json.RawMessage(`{"ID":"1"}`), checksum: "a"},
		{sourceID: "2", payload: json.RawMessage(`{"ID":"2"}`), checksum: "b", parent: "9"},
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if n, err := NewStore(tx).insertRecords(ctx, "things", recs[:1]); err != nil || n != 1 {
			t.Fatalf("first insert: %d, %v", n, err)
		}
		n, err := NewStore(tx).insertRecords(ctx, "things", recs)
		if err != nil || n != 1 {
			t.Errorf("second insert: %d, %v; want the one new record", n, err)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var parent *string
	if err := pool.QueryRow(ctx, `SELECT count(*), max(parent_source_id) FROM bitrix_records WHERE entity = 'things'`).Scan(&n, &parent); err != nil || n != 2 || parent == nil || *parent != "9" {
		t.Errorf("%d records, parent %v (%v); want 2, parent 9", n, parent, err)
	}
}
