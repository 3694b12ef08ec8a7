package social

import (
	"context"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/ingest-dev/ingest/internal/dbtest"
	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

// BenchmarkRawInsert appends real-sized pages to the raw store one per transaction, as the
// walks do: a page of 100 media with carousels expanded, and a page of 50 comments with replies
// inline, both taken from the fake Graph API.
//
//	go test -run '^$' -bench BenchmarkRawInsert -benchtime 5000x ./internal/social/
func BenchmarkRawInsert(b *testing.B) {
	ctx := context.Background()
	fake := graphfake.New(graphfake.Options{Seed: 63, NoFixtureAccounts: true, Accounts: []graphfake.AccountSpec{
		{Username: "big", Connected: true, Posts: 200, Comments: 4000}}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	g, err := graph.New(graph.Options{BaseURL: srv.URL + "/v23.0", UserAgent: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	c := creds{token: fake.Token("big")}
	media, err := g.Get(ctx, connectedMedia.request(c, fake.UserID("big"), ""))
	if err != nil {
		b.Fatal(err)
	}
	post := fake.Accounts()[0].Posts[0] // the newest holds the most comments
	comm, err := g.Get(ctx, comments.request(c, post, ""))
	if err != nil {
		b.Fatal(err)
	}
	pool := dbtest.Pool(b)
	for _, tc := range []struct {
		name string
		body []byte
	}{{"media-page", media.Body}, {"comments-page", comm.Body}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			for i := 0; i < b.N; i++ {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := insertRaw(ctx, tx, rawPage{AccountID: 1, Endpoint: "media", Request: "1/media?" + url.Values{"limit": {"100"}}.Encode(),
					Cursor: "QVFIUk", HasNext: true, Items: 100, Body: tc.body}); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
