package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ingest-dev/ingest/internal/social"
	"github.com/ingest-dev/ingest/internal/social/graph"
)

// socialCmd is `ingest social ...`: account sync (seed 003), Instagram first.
type socialCmd struct {
	GraphURL  string `arg:"--graph-url,env:SOCIAL_GRAPH_URL" help:"Instagram Graph API root with its version (a fake's for tests)" placeholder:"URL"`
	TokenKey  string `arg:"--token-key,env:SOCIAL_TOKEN_KEY" help:"base64 of 32 bytes sealing access tokens in the database (secret; needed by accounts add/import and sync)" placeholder:"KEY"`
	Shards    int    `arg:"--shards,env:SOCIAL_SHARDS" default:"1" help:"how many shards the accounts are split into: the Indexed Job's completions" placeholder:"N"`
	Shard     int    `arg:"--shard,env:JOB_COMPLETION_INDEX" default:"0" help:"this run's shard, 0 to shards-1 (set by Kubernetes in an Indexed Job)" placeholder:"I"`
	Interval  string `arg:"--interval,env:SOCIAL_SYNC_INTERVAL" default:"6h" help:"time between two syncs of an account (under 24h catches every story)" placeholder:"DURATION"`
	Overlap   string `arg:"--overlap,env:SOCIAL_OVERLAP" default:"72h" help:"how far below its high-water mark a later listing reads again, to refresh counts" placeholder:"DURATION"`
	CursorTTL string `arg:"--cursor-ttl,env:SOCIAL_CURSOR_TTL" default:"1h" help:"how long a stored cursor may resume an interrupted walk" placeholder:"DURATION"`
	Pause     string `arg:"--pause,env:SOCIAL_BATCH_PAUSE" default:"1s" help:"pause between two batches" placeholder:"DURATION"`
	Parallel  int    `arg:"--concurrency,env:SOCIAL_CONCURRENCY" default:"8" help:"sync: accounts (comments: posts) a shard works at once, 1 to 64" placeholder:"N"`
	JobCap    int    `arg:"--job-cap,env:SOCIAL_ENRICH_CAP" default:"20" help:"enrich: unfinished jobs per provider at most" placeholder:"N"`

	// Accounts and Status are the arguments of `social accounts add|import` and `social
	// status`, each parsed by its own command (socialTree).
	Accounts socialAccountsCmd `arg:"-"`
	Status   *socialStatusCmd  `arg:"-"`
}

type socialAccountsCmd struct {
	Add    *socialAddCmd
	Import *socialImportCmd
}

// socialTree is the `social` command: c's options and the commands below it, each with its
// behaviour.
func socialTree(c *socialCmd) *cliCommand {
	c.Accounts = socialAccountsCmd{Add: &socialAddCmd{}, Import: &socialImportCmd{}}
	c.Status = &socialStatusCmd{}
	key := socialNeed{key: true}
	profiles := socialStep{"profiles", (*social.Syncer).SyncProfiles}
	posts := socialStep{"posts", (*social.Syncer).SyncPosts}
	comments := socialStep{"comments", (*social.Syncer).SyncComments}
	normalize := socialStep{"normalize", (*social.Syncer).Normalize}
	sync := func(label string, steps ...socialStep) *action {
		return socialAction(c, label, key, true, func(ctx context.Context, app *app, set socialSettings) error {
			return app.socialSync(ctx, label, c, set, steps)
		})
	}
	enrich := func(label string, do func(*social.Enricher, context.Context) (social.EnrichStats, error)) *action {
		return socialAction(c, label, socialNeed{enrich: true}, true, func(ctx context.Context, app *app, set socialSettings) error {
			return app.socialEnrich(ctx, label, c, set, do)
		})
	}
	add := socialAction(c, "social accounts add", key, true, func(ctx context.Context, app *app, _ socialSettings) error { return app.socialAdd(ctx, c) })
	add.usage = c.Accounts.Add.check
	return &cliCommand{name: "social", options: c, help: "social-account sync (Instagram): accounts, sync, normalize, enrich, status",
		subs: []*cliCommand{
			{name: "accounts", help: "register accounts to track: add, import", subs: []*cliCommand{
				{name: "add", help: "track one account: --username (business discovery) or --ig-user-id with a token (connected)", options: c.Accounts.Add, act: add},
				{name: "import", help: "track the accounts of a CSV file (header: username,ig_user_id,token,via)", options: c.Accounts.Import,
					act: socialAction(c, "social accounts import", key, true, func(ctx context.Context, app *app, _ socialSettings) error { return app.socialImport(ctx, c) })},
			}},
			{name: "sync", help: "sync profiles, posts, comments of the due accounts of this shard (or run: all, then normalize)", subs: []*cliCommand{
				{name: "profiles", help: "read the profile of every due account", act: sync("social sync profiles", profiles)},
				{name: "posts", help: "list the media (and stories) of accounts whose profile was read", act: sync("social sync posts", posts)},
				{name: "comments", help: "walk the comments of new or changed posts of synced accounts", act: sync("social sync comments", comments)},
				{name: "run", help: "profiles, posts, comments, then normalize, in order", act: sync("social sync run", profiles, posts, comments, normalize)},
			}},
			{name: "normalize", help: "validate fetched posts and write the normalized tables",
				act: socialAction(c, "social normalize", socialNeed{}, true, func(ctx context.Context, app *app, set socialSettings) error {
					return app.socialSync(ctx, "social normalize", c, set, []socialStep{normalize})
				})},
			{name: "enrich", help: "asynchronous enrichment: submit, poll", subs: []*cliCommand{
				{name: "submit", help: "send waiting posts to the configured providers, within the cap", act: enrich("social enrich submit", (*social.Enricher).Submit)},
				{name: "poll", help: "poll due jobs; read, store and normalize finished ones", act: enrich("social enrich poll", (*social.Enricher).Poll)},
			}},
			{name: "status", help: "per account: what was and was not synced, calls per sync, parks, rejects", options: c.Status,
				act: socialAction(c, "social status", socialNeed{}, false, func(ctx context.Context, app *app, _ socialSettings) error { return app.socialStatus(ctx, c.Status) })},
		}}
}

// socialNeed is what a social command needs of the configuration beyond its defaults.
type socialNeed struct {
	// key: SOCIAL_TOKEN_KEY, which seals and unseals the access tokens.
	key bool
	// enrich: at least one enrichment provider, each with its token.
	enrich bool
}

// socialStep is one step of a sync: its name in metrics and logs, and the Syncer's method.
type socialStep struct {
	name string
	run  func(*social.Syncer, context.Context) (social.Stats, error)
}

type socialAddCmd struct {
	Username  string `arg:"--username" help:"a business or creator account read through business discovery" placeholder:"NAME"`
	Via       string `arg:"--via" help:"the connected account (username or IG user id) whose token reads it; default the oldest" placeholder:"ACCOUNT"`
	IGUserID  string `arg:"--ig-user-id" help:"a connected account's IG user id" placeholder:"ID"`
	TokenFile string `arg:"--token-file" help:"file holding the connected account's access token (never on the command line)" placeholder:"PATH"`
	TokenEnv  string `arg:"--token-env" help:"environment variable holding the access token" placeholder:"VAR"`
}

type socialImportCmd struct {
	File string `arg:"positional,required" help:"CSV file, - for stdin (it may hold tokens: a secret)" placeholder:"FILE"`
}

type socialStatusCmd struct {
	Account string `arg:"--account" help:"one account: username, IG user id or id:N" placeholder:"ACCOUNT"`
	Limit   int    `arg:"--limit" default:"50" help:"accounts listed (by id)" placeholder:"N"`
	JSON    bool   `arg:"--json" help:"print JSON"`
}

type showSocialCmd struct {
	Key  string `arg:"positional,required" help:"an account (username, IG user id, id:N) or a post (its IG media id)" placeholder:"ACCOUNT|POST"`
	JSON bool   `arg:"--json" help:"print JSON"`
}

// socialSettings is the checked configuration of a social command.
type socialSettings struct {
	interval, overlap, cursorTTL, pause time.Duration
	providers                           map[string][2]string // name -> URL, token
}

// check validates the social configuration the command named label needs before anything
// connects and registers its secrets for redaction.
func (c *socialCmd) check(label string, need socialNeed, redact func(string)) (socialSettings, error) {
	var s socialSettings
	if c == nil {
		return s, nil
	}
	redact(c.TokenKey)
	for _, d := range []struct {
		name, v string
		to      *time.Duration
	}{{"SOCIAL_SYNC_INTERVAL", c.Interval, &s.interval}, {"SOCIAL_OVERLAP", c.Overlap, &s.overlap},
		{"SOCIAL_CURSOR_TTL", c.CursorTTL, &s.cursorTTL}, {"SOCIAL_BATCH_PAUSE", c.Pause, &s.pause}} {
		v, err := time.ParseDuration(d.v)
		if err != nil || v < 0 {
			return s, configError{fmt.Sprintf("%s %q: want a duration such as 6h or 30m", d.name, d.v)}
		}
		*d.to = v
	}
	if c.Shards < 1 || c.Shards > maxSocialShards || c.Shard < 0 || c.Shard >= c.Shards {
		return s, configError{fmt.Sprintf("shard %d of %d (JOB_COMPLETION_INDEX of SOCIAL_SHARDS): want 0 <= index < shards <= %d", c.Shard, c.Shards, maxSocialShards)}
	}
	if c.GraphURL != "" {
		if err := checkHTTPURL(c.GraphURL); err != nil {
			return s, configError{"SOCIAL_GRAPH_URL: " + err.Error()}
		}
	}
	if _, err := social.NewSealer(c.TokenKey); err != nil {
		return s, configError{err.Error()}
	}
	if need.key && c.TokenKey == "" {
		return s, configError{"SOCIAL_TOKEN_KEY is required for " + label + ": 32 random bytes in base64 (head -c32 /dev/urandom | base64), kept in a Secret; it seals the access tokens stored in the database"}
	}
	// Providers are configured by SOCIAL_ENRICH_<NAME>_URL and _TOKEN, for each registered one.
	s.providers = map[string][2]string{}
	for _, p := range social.Providers {
		env := "SOCIAL_ENRICH_" + strings.ToUpper(p.Name)
		u, tok := os.Getenv(env+"_URL"), os.Getenv(env+"_TOKEN")
		redact(tok)
		if u == "" {
			continue
		}
		if err := checkHTTPURL(u); err != nil {
			return s, configError{env + "_URL: " + err.Error()}
		}
		if need.enrich && strings.TrimSpace(tok) == "" {
			return s, configError{env + "_TOKEN is empty while " + env + "_URL is set: the provider would refuse every call (401)"}
		}
		s.providers[p.Name] = [2]string{u, tok}
	}
	if need.enrich && len(s.providers) == 0 {
		names := make([]string, len(social.Providers))
		for i, p := range social.Providers {
			names[i] = "SOCIAL_ENRICH_" + strings.ToUpper(p.Name) + "_URL"
		}
		return s, configError{"no enrichment provider is configured: set " + strings.Join(names, " and/or ") + " (and its _TOKEN)"}
	}
	if c.Parallel < 1 || c.Parallel > social.MaxConcurrency {
		return s, configError{fmt.Sprintf("SOCIAL_CONCURRENCY %d: want 1 to %d", c.Parallel, social.MaxConcurrency)}
	}
	if c.JobCap < 1 {
		return s, configError{"SOCIAL_ENRICH_CAP must be at least 1"}
	}
	return s, nil
}

func (c *socialCmd) graphURL() string {
	if c.GraphURL == "" {
		return graph.DefaultBaseURL
	}
	return c.GraphURL
}

// check validates the add flags before anything connects.
func (c *socialAddCmd) check() error {
	if c.TokenFile != "" && c.TokenEnv != "" {
		return usageError{"social accounts add: --token-file or --token-env, not both"}
	}
	if (c.TokenFile != "" || c.TokenEnv != "") && c.IGUserID == "" {
		return usageError{"social accounts add: a token needs --ig-user-id"}
	}
	if c.IGUserID != "" && c.TokenFile == "" && c.TokenEnv == "" {
		return usageError{"social accounts add: --ig-user-id needs --token-file or --token-env (tokens never go on the command line)"}
	}
	if c.IGUserID == "" && c.Username == "" {
		return usageError{"social accounts add: --username (business discovery) or --ig-user-id with a token (connected) is required"}
	}
	return nil
}
