package social_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/social"
)

// BenchmarkNormalize times the normalize step of a first cycle: 300 generated accounts (their
// posts, carousel children, comments, replies and tags) synced once, then normalized again and
// again from the same raw pages into emptied typed tables. It reports the rows written a
// second.
//
//	scripts/with-pg.sh go test -run '^$' -bench BenchmarkNormalize -benchtime 5x ./internal/social/
func BenchmarkNormalize(b *testing.B) {
	e := newEnv(b, graphfake.Options{Seed: 34, GeneratedAccounts: 300, NoFixtureAccounts: true})
	addGenerated(e)
	s := e.syncer(0, 0)
	s.Log = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s.Providers = []string{"text", "vision"}
	for _, step := range []func() (social.Stats, error){
		func() (social.Stats, error) { return s.SyncProfiles(e.ctx) },
		func() (social.Stats, error) { return s.SyncPosts(e.ctx) },
		func() (social.Stats, error) { return s.SyncComments(e.ctx) },
	} {
		if _, err := step(); err != nil {
			b.Fatal(err)
		}
	}
	reset := func() {
		for _, q := range []string{
			`TRUNCATE social_post_content, social_post_counts, social_media_items, social_comments, social_tags, social_rejects, social_enrichments CASCADE`,
			`UPDATE social_posts SET status = 'fetched', normalized_upto = 0 WHERE status = 'normalized'`,
			`VACUUM ANALYZE social_posts`,
		} {
			if _, err := e.pool.Exec(e.ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	rows := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		reset()
		b.StartTimer()
		if _, err := s.Normalize(e.ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rows = e.count(`SELECT (SELECT count(*) FROM social_post_content) + (SELECT count(*) FROM social_post_counts) + (SELECT count(*) FROM social_media_items)
 + (SELECT count(*) FROM social_comments) + (SELECT count(*) FROM social_tags) + (SELECT count(*) FROM social_rejects) + (SELECT count(*) FROM social_enrichments)`)
		b.StartTimer()
	}
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
