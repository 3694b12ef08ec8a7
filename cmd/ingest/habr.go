package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/fetch"
	"github.com/ingest-dev/ingest/internal/habr"
	"github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

type discoverHabrCmd struct {
	Feeds []string `arg:"--feed,separate,env:HABR_FEEDS" help:"a feed to read instead of the defaults (all articles and news, Russian and English): a path such as /ru/rss/hubs/go/articles/?fl=ru or an https://habr.com/... URL; repeat the flag, or separate them by commas in HABR_FEEDS" placeholder:"FEED"`
}

type showHabrCmd struct {
	ID   int64 `arg:"positional,required" help:"Habr article id" placeholder:"ID"`
	JSON bool  `arg:"--json" help:"print JSON"`
}

func (c *showHabrCmd) check() error                             { return nil }
func (c *showHabrCmd) show(ctx context.Context, app *app) error { return app.showHabr(ctx, c) }

// habrPipeline is Habr's part of the command line (seed 004).
func habrPipeline() *pipeline {
	discover := &discoverHabrCmd{}
	return &pipeline{
		name:       "habr",
		machines:   []*status.Machine{habr.Machine},
		statusHelp: "Habr publications only",
		show:       &showHabrCmd{},
		showHelp:   "a Habr publication",
		idHelp:     "article ids",
		commands: []*cliCommand{
			{name: "discover", help: "register new publications from a source's feeds", subs: []*cliCommand{
				{name: "habr", help: "read Habr's RSS feeds (HABR_BASE_URL) and register new publications as extract_pending", options: discover,
					act: habrAction(func(ctx context.Context, app *app) error { return app.discoverHabr(ctx, discover) })},
			}},
			{name: "extract", help: "extract the text of pending publications", subs: []*cliCommand{
				{name: "habr", help: "extract Markdown for extract_pending publications, then extract_failed ones whose retry is due (seed 004; takes no parameters)",
					act: habrAction(func(ctx context.Context, app *app) error { return app.extractHabr(ctx) })},
			}},
		},
	}
}

// habrAction is the behaviour of a Habr command that runs fn: a recorded run owning every Habr
// record, which needs a valid HABR_BASE_URL.
func habrAction(fn func(ctx context.Context, app *app) error) *action {
	return &action{
		config: func(a *args, _ *redact.Redactor) error {
			if err := checkHTTPURL(a.HabrBaseURL); err != nil {
				return configError{"HABR_BASE_URL: " + err.Error()}
			}
			return nil
		},
		run:      fn,
		recorded: true,
		records:  everyMachine("habr", []*status.Machine{habr.Machine}),
	}
}

// habrEntity is the entity label of Habr publications in metrics and logs.
const habrEntity = "habr_publications"

func (app *app) habrFetcher() (*fetch.Client, error) {
	return fetch.New(fetch.Config{
		BaseURL:   app.args.HabrBaseURL,
		UserAgent: fmt.Sprintf("ingest/%s (+https://github.com/ingest-dev/ingest; batch archiver)", version),
	})
}

func (app *app) discoverHabr(ctx context.Context, c *discoverHabrCmd) error {
	f, err := app.habrFetcher()
	if err != nil {
		return configError{err.Error()}
	}
	var feeds []string
	for _, feed := range c.Feeds {
		if strings.TrimSpace(feed) == "" {
			continue
		}
		path, err := habr.FeedPath(feed)
		if err != nil {
			return configError{"HABR_FEEDS / --feed: " + err.Error()}
		}
		feeds = append(feeds, path)
	}
	return app.exec(ctx, "discover habr", func(ctx context.Context, r *run.Run) error {
		d := &habr.Discoverer{Pool: app.pool, Fetcher: f, Log: r.Log.With("entity", habrEntity), Metrics: r.Metrics, Feeds: feeds}
		st, err := d.Run(ctx)
		r.Log.Info("discovery done", "feeds", st.Feeds, "feeds_failed", st.FeedsFailed, "items", st.Items, "new", st.New, "skipped_items", st.Bad)
		return err
	})
}

func (app *app) extractHabr(ctx context.Context) error {
	f, err := app.habrFetcher()
	if err != nil {
		return configError{err.Error()}
	}
	return app.exec(ctx, "extract habr", func(ctx context.Context, r *run.Run) error {
		defer r.Metrics.Phase(habrEntity, "extract")()
		// The entity on every line, progress lines included, as the Bitrix24 engine's lines have it.
		log := r.Log.With("entity", habrEntity)
		e := &habr.Extraction{Pool: app.pool, Fetcher: f, Extractor: habr.NewExtractor(), Log: log, Metrics: r.Metrics, Actor: r.Actor(), RunID: r.ID}
		st, err := e.Run(ctx)
		r.Log.Info("extraction done", "done", st.Done, "extracted", st.Extracted, "failed", st.Failed, "broken", st.Broken, "from_cache", st.Cached)
		return err
	})
}

func (app *app) showHabr(ctx context.Context, c *showHabrCmd) error {
	p, md, err := habr.GetPublication(ctx, app.pool, c.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		app.log.Error(fmt.Sprintf("no Habr publication %d is registered", c.ID))
		return errReported
	}
	if err != nil {
		return err
	}
	hist, err := habr.Machine.History(ctx, app.pool, c.ID)
	if err != nil {
		return err
	}
	if c.JSON {
		return app.printJSON(map[string]any{"publication": p, "history": hist, "markdown": md})
	}
	w := tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "id\t%d\n", p.ID)
	fmt.Fprintf(w, "url\t%s\n", shown(p.URL))
	fmt.Fprintf(w, "title\t%s\n", shown(p.Title))
	author := p.Author
	if p.AuthorName != "" {
		author = fmt.Sprintf("%s (%s)", p.Author, p.AuthorName)
	}
	fmt.Fprintf(w, "author\t%s\n", shown(author))
	if p.PublishedAt != nil {
		fmt.Fprintf(w, "published\t%s (as received: %s)\n", p.PublishedAt.UTC().Format(time.RFC3339), shown(p.PublishedRaw))
	}
	if p.Company.Alias != "" || p.Company.Name != "" {
		fmt.Fprintf(w, "company blog\t%s (%s)\n", shown(p.Company.Name), shown(p.Company.Alias))
	}
	if p.Translation != (habr.Translation{}) {
		fmt.Fprintf(w, "translation of\t%s, %s\n", shown(p.Translation.OriginalAuthor), shown(p.Translation.OriginalURL))
	}
	fmt.Fprintf(w, "hubs\t%s\n", shown(strings.Join(p.Hubs, ", ")))
	fmt.Fprintf(w, "tags\t%s\n", shown(strings.Join(p.Tags, ", ")))
	fmt.Fprintf(w, "feed categories\t%s\n", shown(strings.Join(p.FeedCategories, ", ")))
	fmt.Fprintf(w, "discovered\t%s in %s\n", p.DiscoveredAt.UTC().Format(time.RFC3339), shown(p.Feed))
	fmt.Fprintf(w, "status\t%s (attempts: %d, since %s)\n", p.Status, p.Attempts, p.StatusChangedAt.UTC().Format(time.RFC3339))
	if p.Status == habr.Failed && p.NextAttemptAt != nil {
		fmt.Fprintf(w, "next attempt\t%s (retries used: %d of %d)\n", p.NextAttemptAt.UTC().Format(time.RFC3339), p.Retries, habr.RetrySchedule.MaxRetries())
	}
	if p.AttemptStartedAt != nil {
		fmt.Fprintf(w, "attempt started\t%s, not finished\n", p.AttemptStartedAt.UTC().Format(time.RFC3339))
	}
	if p.LastError != "" {
		fmt.Fprintf(w, "last error\t%s\n", shown(p.LastError))
	}
	fmt.Fprintln(w, "\nhistory")
	fmt.Fprintf(w, "  %s\t\textract_pending\tdiscovered\n", p.DiscoveredAt.UTC().Format(time.RFC3339))
	writeHistory(w, hist)
	if err := w.Flush(); err != nil {
		return err
	}
	if md == nil {
		fmt.Fprintln(app.stdout, "\n(no Markdown extracted)")
		return nil
	}
	fmt.Fprintf(app.stdout, "\nmarkdown (extractor %s, sha256 %s, %s)\n\n%s\n", md.ExtractorVersion, md.ContentHash[:12], md.ExtractedAt.UTC().Format(time.RFC3339), shownBlock(md.Text))
	return nil
}
