package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/redact"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/social/enrichapi"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

// socialCommands holds the arguments of the social pipeline's command, `social`.
type socialCommands struct {
	Social *socialCmd
}

func (c *showSocialCmd) check() error                             { return nil }
func (c *showSocialCmd) show(ctx context.Context, app *app) error { return app.showSocial(ctx, c) }

// socialPipeline is the social-account sync's part of the command line (seed 003).
func socialPipeline() *pipeline {
	cmds := &socialCommands{Social: &socialCmd{}}
	return &pipeline{
		name:       "social",
		machines:   social.Machines(),
		statusHelp: "social accounts, posts and enrichment only (ingest social status: per account)",
		show:       &showSocialCmd{},
		showHelp:   "a social account or post",
		commands:   []*cliCommand{socialTree(cmds.Social)},
	}
}

// socialAction is the behaviour of the `social ...` command named label: its configuration,
// checked with what it needs, and fn run with the checked settings. Sharded runs are named
// "social sync run shard 0/4": ingest status matches them by label as a prefix. Every social
// command moves records of every social machine (a sync queues enrichments; a submit moves
// posts' enrichments and makes jobs).
func socialAction(c *socialCmd, label string, need socialNeed, recorded bool, fn func(ctx context.Context, app *app, set socialSettings) error) *action {
	return &action{
		config: func(_ *args, r *redact.Redactor) error {
			_, err := c.check(label, need, r.Add)
			return err
		},
		run: func(ctx context.Context, app *app) error {
			set, err := c.check(label, need, app.redactor.Add)
			if err != nil {
				return err
			}
			return fn(ctx, app, set)
		},
		recorded: recorded,
		records:  everyMachine("social", social.Machines()),
	}
}

// shardSuffix names this run's shard in run and lock names ("" when unsharded).
// The metrics take the shard out of the command label into a label of its own.
func shardSuffix(c *socialCmd) string { return metrics.ShardSuffix(c.Shard, c.Shards) }

// socialPool opens the pool of the social sync commands, tuned by social.TunePool.
func (app *app) socialPool(ctx context.Context) (*pgxpool.Pool, error) {
	cfg := app.pool.Config().Copy()
	social.TunePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

func (app *app) socialSync(ctx context.Context, command string, c *socialCmd, set socialSettings, steps []socialStep) error {
	sealer, _ := social.NewSealer(c.TokenKey) // checked
	pool, err := app.socialPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	// One lock set for every sync step (socialLocks): profiles, posts, comments and normalize of
	// a shard never overlap, shards of one count run side by side and never share an account,
	// and nothing else that could pick the same accounts runs beside them.
	return app.execSet(ctx, command+shardSuffix(c), socialLocks(c.Shard, c.Shards), func(ctx context.Context, r *run.Run) error {
		g, err := graph.New(graph.Options{BaseURL: c.graphURL(), UserAgent: "ingest/" + version,
			OnRetry: func(endpoint string, attempt int, err error, wait time.Duration) {
				r.Log.Warn("graph call retried", "endpoint", endpoint, "attempt", attempt, "wait_s", wait.Seconds(), "error", err)
			}})
		if err != nil {
			return configError{"SOCIAL_GRAPH_URL: " + err.Error()}
		}
		s := &social.Syncer{Pool: pool, Graph: g, Sealer: sealer, Log: r.Log, Metrics: r.Metrics, Actor: r.Actor(), RunID: r.ID,
			Gate:     &social.Gate{Pool: pool, Log: r.Log},
			Interval: set.interval, Overlap: set.overlap, CursorTTL: set.cursorTTL, Pause: set.pause, Concurrency: c.Parallel}
		if set.pause == 0 {
			s.Pause = -1
		}
		for name := range set.providers {
			s.Providers = append(s.Providers, name)
		}
		slices.Sort(s.Providers)
		s.Shard.Count, s.Shard.Index = c.Shards, c.Shard
		for _, sp := range steps {
			step := sp.name
			done := r.Metrics.Phase("social", step)
			st, err := sp.run(s, ctx)
			done()
			for outcome, n := range st.Outcomes {
				r.Metrics.Processed.WithLabelValues("social_"+step, outcome).Add(float64(n))
			}
			r.Log.Info(step+" done", "records", st.Records, "calls", st.Calls, "pages", st.Pages, "items", st.Items,
				"restarts", st.Restarts, "outcomes", st.Outcomes, "parked", st.Parked, "stopped_early", st.Truncated,
				"incomplete", st.Incomplete, "repairs", st.Repairs)
			if err != nil {
				return err
			}
		}
		if c.Shards <= 1 && app.args.PushgatewayURL != "" {
			// An unsharded run's series carry no shard: every shard group of its command is stale.
			if err := metrics.DeleteStaleShards(ctx, app.args.PushgatewayURL, metrics.CommandLabel(command), 0); err != nil {
				r.Log.Warn("stale shard groups not deleted from the pushgateway", "error", err)
			}
		}
		return nil
	})
}

// socialEnrich runs do (submit or poll) as the recorded run command.
func (app *app) socialEnrich(ctx context.Context, command string, c *socialCmd, set socialSettings, do func(*social.Enricher, context.Context) (social.EnrichStats, error)) error {
	pool, err := app.socialPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return app.exec(ctx, command, func(ctx context.Context, r *run.Run) error {
		e := &social.Enricher{Pool: pool, Log: r.Log, Metrics: r.Metrics, Actor: r.Actor(), RunID: r.ID, Cap: c.JobCap,
			Clients: map[string]*enrichapi.Client{}}
		for name, p := range set.providers {
			cl, err := enrichapi.New(p[0], p[1])
			if err != nil {
				return configError{"SOCIAL_ENRICH_" + strings.ToUpper(name) + "_URL: " + err.Error()}
			}
			e.Clients[name] = cl
		}
		st, err := do(e, ctx)
		r.Metrics.Processed.WithLabelValues("social_enrich", "jobs_submitted").Add(float64(st.Jobs))
		r.Metrics.Processed.WithLabelValues("social_enrich", "jobs_succeeded").Add(float64(st.Succeeded))
		r.Metrics.Processed.WithLabelValues("social_enrich", "jobs_failed").Add(float64(st.Failed))
		r.Metrics.Processed.WithLabelValues("social_enrich", "jobs_expired").Add(float64(st.Expired))
		r.Log.Info("enrichment done", "jobs_submitted", st.Jobs, "items", st.Items, "polls", st.Polls, "succeeded", st.Succeeded,
			"failed", st.Failed, "expired", st.Expired, "labels", st.Labels, "nothing_to_send", st.Skipped, "at_cap", st.CapReached,
			"adopted", st.Adopted, "token_refused", st.Refused)
		if pr := new(social.ProviderRefusedError); errors.As(err, &pr) {
			return configError{err.Error()} // a provider's token: exit 78, after the others' work
		}
		return err
	})
}

// readToken reads a connected account's token from a file or a variable: never from the
// command line, where shell history and process lists would keep it.
func readToken(c *socialAddCmd) (string, error) {
	switch {
	case c.TokenFile != "":
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return "", configError{fmt.Sprintf("--token-file: %v", err)}
		}
		return strings.TrimSpace(string(b)), nil
	case c.TokenEnv != "":
		v := strings.TrimSpace(os.Getenv(c.TokenEnv))
		if v == "" {
			return "", configError{fmt.Sprintf("--token-env: $%s is empty", c.TokenEnv)}
		}
		return v, nil
	}
	return "", nil
}

func (app *app) socialAdd(ctx context.Context, c *socialCmd) error {
	add := c.Accounts.Add
	token, err := readToken(add)
	if err != nil {
		return err
	}
	app.redactor.Add(token)
	sealer, _ := social.NewSealer(c.TokenKey)
	res, err := social.Add(ctx, app.pool, sealer, social.NewAccount{Username: add.Username, IGUserID: add.IGUserID, Token: token, Via: add.Via},
		"manual: "+os.Getenv("USER"))
	if err != nil {
		// A log line like every other on stderr (JSON where asked), the token masked.
		app.log.Error("social accounts add: " + app.redactor.String(err.Error()))
		return errReported
	}
	what := "already tracked, unchanged"
	switch {
	case res.Created:
		what = "added"
	case res.Resumed:
		what = "token renewed; back to profile_pending"
	case res.Renewed:
		what = "token renewed"
	}
	fmt.Fprintf(app.stdout, "account id:%d (%s): %s\n", res.ID, res.Access, what)
	return nil
}

func (app *app) socialImport(ctx context.Context, c *socialCmd) error {
	var in io.Reader = os.Stdin
	if f := c.Accounts.Import.File; f != "-" {
		file, err := os.Open(f)
		if err != nil {
			return configError{fmt.Sprintf("social accounts import: %v", err)}
		}
		defer file.Close()
		in = file
	}
	sealer, _ := social.NewSealer(c.TokenKey)
	res, err := social.Import(ctx, app.pool, sealer, in, "import by "+os.Getenv("USER"))
	for _, f := range res.Failed {
		fmt.Fprintln(app.stdout, "refused:", app.redactor.String(f.Error()))
	}
	fmt.Fprintf(app.stdout, "%d added, %d updated, %d unchanged, %d refused\n", res.Created, res.Updated, res.Unchanged, len(res.Failed))
	if err != nil {
		return err
	}
	if len(res.Failed) > 0 {
		return errReported
	}
	return nil
}

func (app *app) socialStatus(ctx context.Context, c *socialStatusCmd) error {
	rep, err := social.BuildReport(ctx, app.pool, social.ReportOptions{Account: c.Account, Limit: c.Limit})
	if err != nil {
		return err
	}
	if c.Account != "" && len(rep.Accounts) == 0 {
		// An empty table would read as "nothing synced yet" for an account nobody tracks.
		app.log.Error(fmt.Sprintf("social status --account: no tracked account %q (by username, IG user id or id:N; ingest social status lists them)", c.Account))
		return errReported
	}
	if c.JSON {
		return app.printJSON(rep)
	}
	w := tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "accounts (%d of %d)\n", len(rep.Accounts), rep.AccountsTotal)
	fmt.Fprintln(w, "  ACCOUNT\tACCESS\tSTATUS\tFOLLOWERS\tPOSTS\tSTORIES\tCOMMENTS\tCALLS PER SYNC CYCLE\tNEXT SYNC")
	for _, a := range rep.Accounts {
		var posts int64
		for _, n := range a.Posts {
			posts += n
		}
		next := "-"
		if a.NextSyncAt != nil {
			next = a.NextSyncAt.UTC().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", accountName(a), a.Access, a.Status, optInt(a.Followers), posts, a.Stories,
			a.Comments, callsLine(a.CycleCalls, a.LastCycleCalls), next)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, a := range rep.Accounts {
		fmt.Fprintf(app.stdout, "\n%s (%s, %s)\n", accountName(a), a.Access, a.Status)
		if a.LastError != "" {
			fmt.Fprintf(app.stdout, "  why: %s\n", shownCut(a.LastError, 200))
		}
		if a.ReasonCode != "" {
			fmt.Fprintf(app.stdout, "  reason code: %s\n", shown(a.ReasonCode))
		}
		for _, cp := range a.Capabilities {
			mark := "no "
			if cp.Synced {
				mark = "yes"
			}
			fmt.Fprintf(app.stdout, "  %s  %-45s %s\n", mark, cp.What, shown(cp.Detail))
		}
	}
	w = tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nrecords by status")
	for _, m := range rep.Counts {
		if m.Count == 0 {
			continue
		}
		scope := ""
		if m.Scope != "" {
			scope = " " + shown(m.Scope)
		}
		fmt.Fprintf(w, "  %s%s\t%s\t%s\n", m.Machine, scope, m.Status, withCodes(m.Count, m.Codes))
	}
	if len(rep.Parks) > 0 {
		fmt.Fprintln(w, "parked (no call until)")
		for _, p := range rep.Parks {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", shown(p.Key), p.Until.UTC().Format(time.RFC3339), shown(p.Reason))
		}
	}
	if len(rep.InvalidPosts) > 0 || rep.RejectsTotal > 0 {
		fmt.Fprintf(w, "failed validation (%d posts shown, %d comments or items in social_rejects)\n", len(rep.InvalidPosts), rep.RejectsTotal)
		for _, x := range append(rep.InvalidPosts, rep.Rejects...) {
			fmt.Fprintf(w, "  %s %s\t%s\n", x.Kind, shown(x.PlatformID), shownCut(x.Reason, 140))
		}
	}
	return w.Flush()
}

func accountName(a social.AccountReport) string {
	switch {
	case a.Username != "":
		return "@" + shownCut(a.Username, 80)
	case a.IGUserID != "":
		return "ig:" + shownCut(a.IGUserID, 80)
	}
	return fmt.Sprintf("id:%d", a.ID)
}

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// callsLine shows the calls of the last complete sync cycle (or of the one in progress).
func callsLine(cur, last map[string]int) string {
	m, tag := last, ""
	if m == nil {
		m, tag = cur, " (in progress)"
	}
	total := 0
	var parts []string
	for _, k := range slices.Sorted(mapsKeys(m)) {
		total += m[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d: %s%s", total, strings.Join(parts, ", "), tag)
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (app *app) showSocial(ctx context.Context, c *showSocialCmd) error {
	isPost, err := social.IsPost(ctx, app.pool, c.Key)
	if err != nil {
		return err
	}
	if isPost {
		d, err := social.ShowPost(ctx, app.pool, c.Key)
		if err != nil {
			return err
		}
		if c.JSON {
			return app.printJSON(d)
		}
		writePost(app.stdout, d)
		return nil
	}
	d, err := social.ShowAccount(ctx, app.pool, c.Key)
	if errors.Is(err, social.ErrNotFound) {
		app.log.Error(fmt.Sprintf("no social account or post %q (an account by username, IG user id or id:N; a post by its IG media id)", c.Key))
		return errReported
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return app.printJSON(d)
	}
	writeAccount(app.stdout, d)
	return nil
}
