// Command fakes runs the project's fake external systems on local ports, for `make demo` and
// for trying ingest by hand: Habr (feeds and article pages from the real fixtures), a Bitrix24
// portal (generated users, workgroups, chats and messages, feed posts and tasks, CRM and
// workflows shaped like the real samples), the target import API, an Instagram Graph API (fixture
// and generated accounts, with the platform's misbehaviour) and asynchronous enrichment providers
// (vision, text).
//
//	fakes --env-file .demo/fakes.env [--habr-fault /ru/articles/1/=503 ...] [--fixtures DIR]
//	      [--bitrix-users N] [--bitrix-chats N] [--bitrix-posts N] [--bitrix-tasks N]
//
// Once every server listens, it writes the URLs to point ingest at as an env file
// (HABR_BASE_URL=..., BITRIX_WEBHOOK_URL=..., TARGET_WEBHOOK_URL=...) and serves until SIGINT or
// SIGTERM.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/alexflint/go-arg"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
	"github.com/ingest-dev/ingest/internal/fakes/enrichfake"
	"github.com/ingest-dev/ingest/internal/fakes/graphfake"
	"github.com/ingest-dev/ingest/internal/fakes/habrfake"
	"github.com/ingest-dev/ingest/internal/fakes/targetfake"
)

type args struct {
	Listen       string        `arg:"--listen" default:"127.0.0.1" help:"address to listen on (each fake gets a free port)"`
	Fixtures     string        `arg:"--fixtures" help:"serve Habr from DIR/habr instead of the fixtures built in (internal/fakes/fixtures)"`
	EnvFile      string        `arg:"--env-file" help:"write the fakes' URLs here as KEY=value lines once they listen"`
	HabrFaults   []string      `arg:"--habr-fault,separate" help:"PATH=FAULT, e.g. /ru/articles/1/=503 (see habrfake.ParseFault)"`
	HabrArticles int           `arg:"--habr-extra-articles" help:"synthetic Habr articles to add to the feeds"`
	BitrixUsers  int           `arg:"--bitrix-users" default:"500" help:"users on the fake Bitrix24 portal"`
	BitrixGroups int           `arg:"--bitrix-groups" default:"40" help:"workgroups on the fake Bitrix24 portal"`
	BitrixSeed   uint64        `arg:"--bitrix-seed" default:"1" help:"seed of the portal's generated data"`
	BitrixChats  int           `arg:"--bitrix-chats" default:"60" help:"chats of the webhook's user (1:1, group, open, task), besides one chat per workgroup"`
	BitrixLines  int           `arg:"--bitrix-open-lines" default:"3" help:"Open Channel conversations, each with an external guest"`
	BitrixMsgs   int           `arg:"--bitrix-messages" default:"60" help:"messages in every chat"`
	BitrixPosts  int           `arg:"--bitrix-posts" default:"120" help:"live feed posts"`
	BitrixPostC  int           `arg:"--bitrix-post-comments" default:"3" help:"average comments per post"`
	BitrixTasks  int           `arg:"--bitrix-tasks" default:"300" help:"tasks (about half in the new card, with a chat)"`
	BitrixTaskC  int           `arg:"--bitrix-task-comments" default:"4" help:"average comments per task"`
	BitrixRate   string        `arg:"--bitrix-rate" default:"2/50" help:"the portal's leaky bucket, drain/burst as on the cloud (5/250 Enterprise); 'off' for none"`
	BitrixDelay  time.Duration `arg:"--bitrix-latency" default:"50ms" help:"how long the portal holds every answer back"`
	BitrixCmd    time.Duration `arg:"--bitrix-method-latency" default:"20ms" help:"and how much longer per method it ran (a full batch of 50 pages: about 1 s)"`
	// The CRM and workflows of the fake portal (internal/fakes/bitrixfake/crm.go, bizproc.go).
	BitrixCompanies int `arg:"--bitrix-companies" default:"300" help:"CRM companies on the fake portal (one of them deleted, still named by a deal)"`
	BitrixContacts  int `arg:"--bitrix-contacts" default:"500" help:"CRM contacts on the fake portal"`
	BitrixDeals     int `arg:"--bitrix-deals" default:"1000" help:"CRM deals on the fake portal, in three funnels"`
	BitrixSmart     int `arg:"--bitrix-smart-items" default:"200" help:"items of each of the fake portal's two smart processes (0: no smart processes)"`
	BitrixWorkflows int `arg:"--bitrix-workflows" default:"10" help:"workflow templates on the fake portal (the CRM ones with running workflows and tasks)"`
	// Changes on the portal for trying a rerun (delta pass) by hand.
	BitrixChurn float64 `arg:"--bitrix-churn" help:"on every SIGUSR1, edit, add, comment and delete this fraction of the portal's CRM and tasks (0.01: issue 35's 1% mix) and log what changed"`
	// A fault of the portal for trying how ingest bounds an answer.
	BitrixBombs    []string `arg:"--bitrix-gzip-bomb,separate" help:"answer every request for this REST method (batch for batches) with a gzip bomb"`
	BitrixBombSize int64    `arg:"--bitrix-gzip-bomb-bytes" default:"4294967296" help:"what a gzip bomb inflates to (it weighs about a thousandth of that)"`
	// The fake Instagram Graph API and the fake enrichment providers.
	SocialSeed      uint64        `arg:"--social-seed" default:"1" help:"seed of the fake Graph API's generated accounts"`
	SocialLatency   time.Duration `arg:"--social-latency" default:"20ms" help:"added to every Graph API answer"`
	SocialThrottle  int           `arg:"--social-throttle-every" help:"answer every Nth Graph API request with a throttling error (HTTP 400)"`
	SocialAccounts  string        `arg:"--social-accounts-file" help:"write the fake's accounts here as CSV for ingest social accounts import (holds its tokens)"`
	SocialGenerated int           `arg:"--social-generated-accounts" help:"serve N generated accounts (seeded by --social-seed: connected and business discovery, few and many posts, heavy-tailed comments, faults at low rates) instead of the demo's six and the two fixture accounts; built on demand, so 10^6 fit"`
	EnrichRunFor    time.Duration `arg:"--enrich-run-for" default:"2s" help:"how long a fake enrichment job runs"`
	EnrichFailEvery int           `arg:"--enrich-fail-every" default:"5" help:"fail every Nth enrichment job (0: none)"`
	EnrichExpiry    time.Duration `arg:"--enrich-expiry" default:"168h" help:"how long finished jobs' results are kept"`
}

func (args) Description() string {
	return "fakes: local fake Habr, Bitrix24 portal and target import API for ingest's demo and manual testing"
}

func main() {
	var a args
	arg.MustParse(&a)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, a, log); err != nil {
		log.Error("fakes", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, a args, log *slog.Logger) error {
	faults := map[string]habrfake.Fault{}
	for _, f := range a.HabrFaults {
		path, spec, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("--habr-fault %q: want PATH=FAULT", f)
		}
		fault, err := habrfake.ParseFault(spec)
		if err != nil {
			return fmt.Errorf("--habr-fault %q: %w", f, err)
		}
		faults[path] = fault
	}
	hopts := habrfake.Options{ExtraArticles: a.HabrArticles, Faults: faults}
	if a.Fixtures != "" {
		hopts.Fixtures = os.DirFS(filepath.Join(a.Fixtures, "habr"))
	}
	habr, err := habrfake.New(hopts)
	if err != nil {
		return err
	}

	env := map[string]string{}
	servers := []*http.Server{}
	serve := func(name, key string, h http.Handler, url func(base string) string) error {
		ln, err := net.Listen("tcp", net.JoinHostPort(a.Listen, "0"))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error(name, "error", err)
			}
		}()
		base := "http://" + ln.Addr().String()
		env[key] = url(base)
		log.Info("fake listening", "fake", name, "url", base)
		return nil
	}
	if err := serve("habr", "HABR_BASE_URL", habr.Handler(), func(b string) string { return b }); err != nil {
		return err
	}
	popts := bitrixfake.Options{Users: a.BitrixUsers, Groups: a.BitrixGroups, Seed: a.BitrixSeed,
		Chats: a.BitrixChats, OpenLines: a.BitrixLines, MessagesPerChat: a.BitrixMsgs,
		Latency: a.BitrixDelay, CommandLatency: a.BitrixCmd, Companies: a.BitrixCompanies, Contacts: a.BitrixContacts,
		Deals: a.BitrixDeals, SmartItems: a.BitrixSmart, Workflows: a.BitrixWorkflows,
		Posts: a.BitrixPosts, PostComments: a.BitrixPostC, Tasks: a.BitrixTasks, TaskComments: a.BitrixTaskC}
	if a.BitrixRate != "off" {
		r, err := rest.ParseRate(a.BitrixRate)
		if err != nil {
			return fmt.Errorf("--bitrix-rate: %w", err)
		}
		popts.Rate, popts.Burst = r.PerSecond, r.Burst
	}
	portal := bitrixfake.New(popts)
	for _, m := range a.BitrixBombs {
		portal.ServeGzipBombs(m, a.BitrixBombSize)
	}
	if a.BitrixChurn > 0 {
		churnOnSignal(ctx, portal, a.BitrixChurn, log)
	}
	if err := serve("bitrix", "BITRIX_WEBHOOK_URL", portal, func(b string) string { return b + portal.WebhookPath() }); err != nil {
		return err
	}
	target := targetfake.New(targetfake.Options{Token: demoTargetToken})
	if err := serve("target", "TARGET_WEBHOOK_URL", target, func(b string) string {
		return strings.Replace(b, "http://", "http://import:"+demoTargetToken+"@", 1) + "/api/v1/"
	}); err != nil {
		return err
	}
	graph := graphfake.New(graphfake.Options{Seed: a.SocialSeed, Latency: a.SocialLatency, ThrottleEvery: a.SocialThrottle,
		GeneratedAccounts: a.SocialGenerated, NoFixtureAccounts: a.SocialGenerated > 0})
	if err := serve("graph", "SOCIAL_GRAPH_URL", graph, func(b string) string { return b + "/v23.0" }); err != nil {
		return err
	}
	provider := enrichfake.New(enrichfake.Options{Token: demoEnrichToken, RunFor: a.EnrichRunFor, FailEvery: a.EnrichFailEvery, Expiry: a.EnrichExpiry})
	if err := serve("enrich", "SOCIAL_ENRICH_VISION_URL", provider, func(b string) string { return b + "/v1/vision" }); err != nil {
		return err
	}
	env["SOCIAL_ENRICH_TEXT_URL"] = strings.Replace(env["SOCIAL_ENRICH_VISION_URL"], "/v1/vision", "/v1/text", 1)
	env["SOCIAL_ENRICH_VISION_TOKEN"], env["SOCIAL_ENRICH_TEXT_TOKEN"] = demoEnrichToken, demoEnrichToken
	if a.SocialAccounts != "" {
		if err := writeSocialAccounts(a.SocialAccounts, graph); err != nil {
			return err
		}
	}
	if a.EnvFile != "" {
		if err := writeEnv(a.EnvFile, env); err != nil {
			return err
		}
	}
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	return nil
}

// demoTargetToken is the fake target's bearer token: not a secret, but ingest treats it as one.
const demoTargetToken = "demo0target0token"

// demoEnrichToken is the fake enrichment providers' bearer token: not a secret, but ingest
// treats it as one.
const demoEnrichToken = "demo0enrich0token"

// writeSocialAccounts writes the fake Graph API's accounts as the CSV `ingest social accounts
// import` reads: connected accounts with their tokens first (they are the viewers), then the
// others by username, read through business discovery. Generated accounts come after the
// others, streamed: a million are listed without building their data.
func writeSocialAccounts(path string, g *graphfake.Server) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	b := bufio.NewWriter(f)
	b.WriteString("username,ig_user_id,token\n")
	accounts := g.Accounts()
	n := g.GeneratedAccounts()
	for _, connected := range []bool{true, false} {
		for _, a := range accounts {
			writeSocialAccount(b, a, connected)
		}
		for i := range n {
			writeSocialAccount(b, g.Generated(i), connected)
		}
	}
	if err := b.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeSocialAccount writes a's line if it is connected (or not) as asked.
func writeSocialAccount(b *bufio.Writer, a graphfake.Account, connected bool) {
	switch {
	case connected && a.Connected:
		fmt.Fprintf(b, "%s,%s,%s\n", a.Username, a.ID, a.Token)
	case !connected && !a.Connected:
		fmt.Fprintf(b, "%s,,\n", a.Username)
	}
}

// writeEnv writes the file atomically, so a reader polling for it never sees half of it.
func writeEnv(path string, env map[string]string) error {
	var b strings.Builder
	for _, k := range []string{"HABR_BASE_URL", "BITRIX_WEBHOOK_URL", "TARGET_WEBHOOK_URL", "SOCIAL_GRAPH_URL",
		"SOCIAL_ENRICH_VISION_URL", "SOCIAL_ENRICH_VISION_TOKEN", "SOCIAL_ENRICH_TEXT_URL", "SOCIAL_ENRICH_TEXT_TOKEN"} {
		if v, ok := env[k]; ok {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	tmp := path + ".tmp"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
