// Command crashchild runs every social command in the DAG's order (accounts import, sync
// profiles, posts, comments, normalize, enrich submit and poll until done) against the fakes of
// TestKilledRunsConverge, which kills it at random moments. It is built by that test, without
// the race detector, so that it runs at production speed.
//
// It prints "phase <name>" as each command starts and "phase done" at the end; the database,
// the fakes and the accounts file come from the environment.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/social/enrichapi"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "crashchild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(os.Getenv("SOCIAL_CRASH_DB"))
	if err != nil {
		return err
	}
	social.TunePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sealer, err := social.NewSealer(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)))
	if err != nil {
		return err
	}
	g, err := graph.New(graph.Options{BaseURL: os.Getenv("SOCIAL_CRASH_GRAPH"), UserAgent: "crashchild", Retry: &retry.Policy{Delays: []time.Duration{0}}})
	if err != nil {
		return err
	}
	// The test compresses time: a kill during a profile read or a comment walk is counted as a
	// failed attempt by the next run (status.Machine.FailUnfinished), whose retry is due at once
	// here instead of a minute later; the kills are not enough to use the retries up.
	s := &social.Syncer{Pool: pool, Graph: g, Sealer: sealer, Log: log, Actor: "crash test", Pause: -1,
		Gate: &social.Gate{Pool: pool, Log: log}, Providers: []string{"text", "vision"},
		RetryPolicy: retry.Policy{Delays: []time.Duration{0, 0, 0, 0, 0}}}
	clients := map[string]*enrichapi.Client{}
	for _, p := range social.Providers {
		if clients[p.Name], err = enrichapi.New(os.Getenv("SOCIAL_CRASH_ENRICH")+"/"+p.Name, "crash-token"); err != nil {
			return err
		}
	}
	e := &social.Enricher{Pool: pool, Log: log, Actor: "crash test", Clients: clients, Cap: 50, JobPosts: 10,
		PollMin: 10 * time.Millisecond, PollMax: 20 * time.Millisecond}

	fmt.Println("phase accounts")
	f, err := os.Open(os.Getenv("SOCIAL_CRASH_ACCOUNTS"))
	if err != nil {
		return err
	}
	res, err := social.Import(ctx, pool, sealer, f, "crash test")
	f.Close()
	if err != nil || len(res.Failed) > 0 {
		return fmt.Errorf("import: %v %v", err, res.Failed)
	}
	// A walk stopped short on empty pages keeps its record waiting (an account in posts_pending,
	// a post in comments_pending): the step is run again, as the next cron run would, until none
	// waits.
	waiting := map[string]string{
		"posts":    `SELECT count(*) FROM social_accounts WHERE status = 'posts_pending'`,
		"comments": `SELECT count(*) FROM social_posts WHERE status = 'comments_pending'`,
	}
	for _, step := range []struct {
		name string
		fn   func(context.Context) (social.Stats, error)
	}{{"profiles", s.SyncProfiles}, {"posts", s.SyncPosts}, {"comments", s.SyncComments}, {"normalize", s.Normalize}} {
		fmt.Println("phase " + step.name)
		for pass := 0; ; pass++ {
			if _, err := step.fn(ctx); err != nil {
				return fmt.Errorf("%s: %w", step.name, err)
			}
			n := 0
			if q := waiting[step.name]; q != "" {
				if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
					return err
				}
			}
			if n == 0 {
				break
			}
			if pass > 200 {
				return fmt.Errorf("%s: %d records still wait after %d runs", step.name, n, pass)
			}
		}
	}
	fmt.Println("phase enrich")
	for i := 0; ; i++ {
		if _, err := e.Submit(ctx); err != nil {
			return err
		}
		if _, err := e.Poll(ctx); err != nil {
			return err
		}
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM social_enrichments WHERE status = ANY($1)`,
			[]string{string(social.EnrichPending), string(social.EnrichQueued), string(social.EnrichRetry)}).Scan(&waiting); err != nil {
			return err
		}
		if waiting == 0 {
			break
		}
		if i > 2000 {
			return fmt.Errorf("enrichment does not finish: %d waiting", waiting)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("phase done")
	return nil
}
