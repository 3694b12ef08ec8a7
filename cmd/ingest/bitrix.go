package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/httplimit"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/memlimit"
	"github.com/ingest-dev/ingest/internal/run"
	"github.com/ingest-dev/ingest/internal/status"
)

// bitrixCmd is `ingest bitrix ...`: the Bitrix24 migration, entity by entity.
type bitrixCmd struct {
	WebhookURL string `arg:"--webhook-url,env:BITRIX_WEBHOOK_URL" help:"source portal incoming webhook, https://PORTAL/rest/USER/TOKEN/ (secret)" placeholder:"URL"`
	TargetURL  string `arg:"--target-url,env:TARGET_WEBHOOK_URL" help:"target import API, https://import:TOKEN@HOST/PATH/ (secret)" placeholder:"URL"`
	Rate       string `arg:"--rate,env:BITRIX_RATE" default:"2/50" help:"portal request limit as drain/burst: 2/50 (standard) or 5/250 (Enterprise)" placeholder:"R/B"`
	TestLimit  int    `arg:"--test-limit,env:BITRIX_TEST_LIMIT" help:"get reads only the first N records of the entity (dependencies come along)" placeholder:"N"`
	// Concurrency only overlaps the portal's answer times: every request still waits for the
	// one leaky bucket, so a higher cap never makes the run ruder to the portal.
	Concurrency int `arg:"--concurrency,env:BITRIX_CONCURRENCY" default:"8" help:"requests in flight at once (get's ID ranges and chat messages, set's import calls), all under the one rate limit" placeholder:"N"`
	// AuthorWebhooks is a file of other users' own webhooks (bitrix_authors.go); authors holds
	// them, read and checked by check.
	AuthorWebhooks string            `arg:"--author-webhooks,env:BITRIX_AUTHOR_WEBHOOKS" help:"file of authors' own incoming webhooks, 'USER_ID URL' a line (secrets): feed get reads their comments' text through them" placeholder:"FILE"`
	authors        map[string]string `arg:"-"`
	// Deletions and AllowMassDelete: what becomes of the records the portal deleted (docs/bitrix-deletions.md).
	Deletions       string `arg:"--deletions,env:BITRIX_DELETIONS" default:"keep" help:"records deleted on the portal: keep (the target keeps them; verify lists them apart) or propagate (set removes them from the target)" placeholder:"POLICY"`
	AllowMassDelete bool   `arg:"--allow-mass-delete,env:BITRIX_ALLOW_MASS_DELETE" help:"let get mark more than 10% of an entity's records deleted on the portal (otherwise it refuses, naming the count)"`
	// Full and FullEvery: when get reads every record again instead of what changed (docs/bitrix-delta.md).
	Full      bool          `arg:"--full,env:BITRIX_FULL" help:"get reads every record again (a full pass), not only what the portal changed since the last complete pass"`
	FullEvery time.Duration `arg:"--full-every,env:BITRIX_FULL_EVERY" default:"168h" help:"a get runs a full pass when the last one started longer ago than this, even if a delta pass could run" placeholder:"DURATION"`

	// Status and Plan are the arguments of `bitrix status` and `bitrix plan`. Each is parsed by
	// its own command.
	Status  *bitrixStatusCmd  `arg:"-"`
	Plan    *bitrixPlanCmd    `arg:"-"`
	Migrate *bitrixMigrateCmd `arg:"-"`
	// given is the entity flags of the command that runs (entityFlags), set by its node's usage
	// check, which Main runs first; nil for none.
	given *entityFlags `arg:"-"`
	// catalog builds the registry the commands come from, a new one each call (bitrix.Catalog).
	catalog func() *engine.Registry `arg:"-"`
}

// registry is the catalog the command's engine runs with: the entity flags given applied.
func (c *bitrixCmd) registry() (*engine.Registry, error) {
	reg := c.catalog()
	if c.given == nil {
		return reg, nil
	}
	return reg, c.given.apply(reg)
}

type bitrixStatusCmd struct {
	JSON bool `arg:"--json" help:"print JSON"`
}

// showBitrixCmd is `show bitrix ENTITY ID`; the help of ENTITY and ID names the registry's
// entities (showBitrixHelp).
type showBitrixCmd struct {
	Entity string `arg:"positional,required" help:"an entity as ingest bitrix status lists it" placeholder:"ENTITY"`
	ID     string `arg:"positional,required" help:"the portal's id" placeholder:"ID"`
	JSON   bool   `arg:"--json" help:"print JSON"`
}

// showBitrixHelp is the help of show bitrix's ENTITY and ID: the first children, whose names
// people would not guess, and the entities whose ids are not one plain number
// (engine.Entity.IDFormat).
func showBitrixHelp(reg *engine.Registry) map[string]string {
	var children, formats []string
	for _, e := range reg.All() {
		if e.Parent != "" && len(children) < 2 {
			children = append(children, e.Name)
		}
		if e.IDFormat != "" {
			formats = append(formats, e.Name+": "+e.IDFormat)
		}
	}
	return map[string]string{
		"Entity": "an entity as ingest bitrix status lists it (children too: " + strings.Join(children, ", ") + "...)",
		"ID":     "the portal's id (" + strings.Join(formats, ", ") + ")",
	}
}

func (c *showBitrixCmd) show(ctx context.Context, app *app) error { return app.showBitrix(ctx, c) }

// bitrixPipeline is the Bitrix24 migration's part of the command line: `ingest bitrix ENTITY
// PHASE` for every entity of the registry, `bitrix status`, `bitrix plan`, and the records of
// every entity for `status`, `show`, `status set` and `status ack`.
func bitrixPipeline() *pipeline {
	c := &bitrixCmd{Status: &bitrixStatusCmd{}, Plan: &bitrixPlanCmd{}, Migrate: &bitrixMigrateCmd{},
		catalog: func() *engine.Registry { return bitrix.Catalog() }}
	reg := c.catalog()
	show := &showBitrixCmd{}
	return &pipeline{
		name:        "bitrix",
		machines:    []*status.Machine{engine.Machine},
		statusHelp:  "Bitrix24 records only (ids for status set are the records' ids shown here and in verify reports)",
		entities:    reg.Names,
		show:        show,
		showOptions: withHelp(show, showBitrixHelp(reg)),
		showHelp:    "a Bitrix24 record, by entity and the portal's id",
		idHelp:      "the portal's ids with --entity (e.g. --entity " + reg.CommandNames()[0] + " --id 42 57), or record ids without it",
		entityHelp:  strings.Join(reg.CommandNames()[:2], ", ") + "...",
		commands:    []*cliCommand{bitrixTree(reg, c)},
	}
}

// maxConcurrency bounds BITRIX_CONCURRENCY: past a few batches in flight the leaky bucket, not
// the portal's answer time, sets the pace, and more only holds more pages in memory.
const maxConcurrency = 32

// bitrixNeeds is which of the portal and the target a command talks to: their URLs are required.
type bitrixNeeds struct{ source, target bool }

// check validates the Bitrix24 configuration the command what (a phase, plan, migrate) needs,
// before anything connects, and registers the secrets for redaction.
func (c *bitrixCmd) check(what string, need bitrixNeeds, redact func(string)) error {
	if need.source && c.WebhookURL == "" {
		return configError{"BITRIX_WEBHOOK_URL (or --webhook-url) is required for " + what + ": the portal's incoming webhook, https://PORTAL/rest/USER/TOKEN/"}
	}
	if need.target && c.TargetURL == "" {
		return configError{"TARGET_WEBHOOK_URL (or --target-url) is required for " + what + ": the target import API, https://import:TOKEN@HOST/PATH/"}
	}
	// A URL given is checked even where the phase does not need it: the engine still builds
	// its client, and a wrong one is better found now than on the next phase.
	if c.WebhookURL != "" {
		token, err := checkPortalWebhook("BITRIX_WEBHOOK_URL", c.WebhookURL)
		redact(token)
		if err != nil {
			return err
		}
	}
	if c.TargetURL != "" {
		token, err := checkTargetURL("TARGET_WEBHOOK_URL", c.TargetURL)
		redact(token)
		if err != nil {
			return err
		}
	}
	if c.AuthorWebhooks != "" {
		var err error
		if c.authors, err = readAuthorWebhooks(c.AuthorWebhooks, c.WebhookURL, redact); err != nil {
			return err
		}
	}
	if _, err := rest.ParseRate(c.Rate); err != nil {
		return configError{"BITRIX_RATE: " + err.Error()}
	}
	if c.TestLimit < 0 {
		return configError{"BITRIX_TEST_LIMIT must be 0 (no limit) or positive"}
	}
	if c.Concurrency < 1 || c.Concurrency > maxConcurrency {
		return configError{fmt.Sprintf("BITRIX_CONCURRENCY must be between 1 and %d, got %d", maxConcurrency, c.Concurrency)}
	}
	if _, err := engine.ParseDeletions(c.Deletions); err != nil {
		return configError{err.Error()}
	}
	return nil
}

// bitrixEngine is the one constructor of the Bitrix24 engine: every bitrix command (an entity's
// phases, migrate, plan, status) builds its engine here, from c's options, checked before (c.check).
// r is the command's run, which signs and logs what it does; nil for plan and status, which record
// no run and log to the process's log. A nil c is a command without options (status): the
// registry and the database only, no client, since its URLs were neither checked nor redacted.
func (app *app) bitrixEngine(c *bitrixCmd, r *run.Run) (*engine.Engine, error) {
	cfg := engine.Config{Registry: bitrix.Catalog(), Pool: app.pool, Log: app.log, MemoryLimit: memlimit.Process()}
	if r != nil {
		cfg.Log, cfg.Metrics, cfg.Actor, cfg.RunID = r.Log, r.Metrics, r.Actor(), r.ID
	}
	if c != nil {
		if err := c.engineConfig(&cfg); err != nil {
			return nil, err
		}
	}
	e, err := engine.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("bitrix: %w", err)
	}
	return e, nil
}

// engineConfig adds c's options and the clients of the portal and the target they name to cfg.
func (c *bitrixCmd) engineConfig(cfg *engine.Config) error {
	cfg.Registry, _ = c.registry() // checked before the run (the flags given, applied)
	cfg.TestLimit, cfg.Concurrency, cfg.AllowMassDelete = c.TestLimit, c.Concurrency, c.AllowMassDelete
	cfg.Deletions, _ = engine.ParseDeletions(c.Deletions) // checked before the run
	cfg.Full, cfg.FullEvery = c.Full, c.FullEvery
	rt, _ := rest.ParseRate(c.Rate) // checked before the run
	if c.WebhookURL != "" {
		// One limiter and one read gate for the portal's clients: the bucket counts all our
		// requests, and the process's memory all their answers.
		opts := rest.Options{Rate: rt, Limiter: rt.NewLimiter(), Logger: cfg.Log, UserAgent: "ingest/" + version,
			ReadGate: httplimit.NewGate(8, 8<<20)}
		src, err := rest.New(c.WebhookURL, opts)
		if err != nil {
			return configError{"BITRIX_WEBHOOK_URL: " + err.Error()}
		}
		cfg.Source = src
		if cfg.Delegates, err = authorSources(c.authors, opts); err != nil {
			return err
		}
	}
	if c.TargetURL != "" {
		t, err := importapi.New(c.TargetURL, importapi.Options{Logger: cfg.Log})
		if err != nil {
			return configError{"TARGET_WEBHOOK_URL: " + err.Error()}
		}
		cfg.Target = t
	}
	return nil
}

// bitrixPhase runs do, a phase (or every phase) of entity, as the recorded run command.
func (app *app) bitrixPhase(ctx context.Context, c *bitrixCmd, command, entity string, do func(context.Context, *engine.Engine) error) error {
	// One lock per entity: two phases of the same entity never overlap, while users and groups
	// (or Habr) may run side by side. Each also holds the pipeline's lock shared, which keeps
	// `bitrix migrate` (exclusive) out while any of them runs, and them out while it runs.
	return app.execLockSet(ctx, command, "bitrix "+entity, []status.SetLock{{Name: bitrixLock, Shared: true}}, []string{bitrixMigrate}, func(ctx context.Context, r *run.Run) error {
		e, err := app.bitrixEngine(c, r)
		if err != nil {
			return err
		}
		return do(ctx, e)
	})
}

func (app *app) bitrixStatus(ctx context.Context, asJSON bool) error {
	e, err := app.bitrixEngine(nil, nil)
	if err != nil {
		return err
	}
	rep, err := e.Report(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return app.printJSON(rep)
	}
	w := tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ENTITY\tNEW\tIMPORT_OK\tERROR_RETRY\tIMPORT_ERR\tSOURCE TOTAL\tGET\tFIELDS (ON TARGET)\tVERIFIED")
	for _, es := range rep.Entities {
		// A child's VERIFIED is its parent's, whose verify covers it (engine.EntityStatus).
		total, get, verified := "-", "-", es.VerifiedState()
		if inv := es.Inventory; inv != nil {
			if inv.SourceTotal != nil {
				total = fmt.Sprint(*inv.SourceTotal)
			}
			get = shownCut(es.PassState(), 120)
		}
		b := es.ByStatus
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d (%d)\t%s\n", es.Entity, b["NEW"], b["IMPORT_OK"], b["ERROR_RETRY"], b["IMPORT_ERR"],
			total, get, es.Fields, es.FieldsOnTarget, verified)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, es := range rep.Entities {
		// The kind of each entity's get pass and why (docs/bitrix-delta.md).
		if inv := es.Inventory; inv != nil && inv.Pass > 0 && inv.Reason != nil {
			fmt.Fprintf(app.stdout, "  %s pass %d (%s): %s\n", es.Entity, inv.Pass, inv.Kind, shownCut(*inv.Reason, 160))
		}
		if s := es.WaitingState(); s != "" {
			fmt.Fprintf(app.stdout, "  %s NEW x%d: %s; parents: %s\n", es.Entity, es.Waiting.Records, s, idList(es.Waiting.Parents, 30))
		}
		for _, g := range es.NotMigrated {
			ack := ""
			if g.Acknowledged {
				ack = fmt.Sprintf(" [acknowledged by %s: %s]", shownCut(strings.TrimPrefix(g.AcknowledgedBy, "manual: "), 80), shownCut(g.AcknowledgedReason, 80))
			}
			fmt.Fprintf(app.stdout, "  %s %s x%d%s: %s\n    ids: %s\n", es.Entity, g.Status, len(g.IDs), ack,
				shownCut(g.Reason, 160), idList(g.IDs, 30))
		}
		if inv := es.Inventory; inv != nil && inv.LastVerify != nil {
			v := inv.LastVerify
			fmt.Fprintf(app.stdout, "  %s last verify %s: %s\n", es.Entity, v.At.UTC().Format(time.RFC3339), shownCut(v.Summary(), 200))
		}
	}
	return nil
}

// check validates the entity before anything connects.
func (c *showBitrixCmd) check() error {
	if names := bitrix.Catalog().Names(); !slices.Contains(names, c.Entity) {
		return usageError{fmt.Sprintf("show bitrix: unknown entity %q (valid: %s)", c.Entity, strings.Join(names, ", "))}
	}
	return nil
}

// showBitrix prints one record: where it stands, why, its history and its payload as read.
func (app *app) showBitrix(ctx context.Context, c *showBitrixCmd) error {
	e, err := app.bitrixEngine(nil, nil)
	if err != nil {
		return err
	}
	d, err := e.RecordDetail(ctx, c.Entity, c.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		app.log.Error(fmt.Sprintf("no %s record with the portal's id %s has been read", c.Entity, c.ID))
		return errReported
	}
	if err != nil {
		return err
	}
	hist, err := engine.Machine.History(ctx, app.pool, d.ID)
	if err != nil {
		return err
	}
	if c.JSON {
		return app.printJSON(map[string]any{
			"id": d.ID, "entity": d.Entity, "source_id": d.SourceID, "parent_source_id": d.ParentSourceID,
			"status": d.Status, "attempts": d.Attempts, "retries": d.Retries, "last_error": d.LastError,
			"next_attempt_at": d.NextAttemptAt, "checksum": d.Checksum, "target_id": d.TargetID,
			"imported_at": d.ImportedAt, "fetched_at": d.FetchedAt, "updated_at": d.UpdatedAt,
			"dates": d.Dates, "payload": d.Payload, "history": hist, "acknowledged_at": d.AcknowledgedAt,
			"acknowledged_by": d.AcknowledgedBy, "acknowledged_reason": d.AcknowledgedReason,
		})
	}
	w := tabwriter.NewWriter(app.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "record\t%d (%s %s, key %s)\n", d.ID, d.Entity, shown(d.SourceID), shown(d.IdempotencyKey()))
	if d.ParentSourceID != "" {
		fmt.Fprintf(w, "parent\t%s\n", shown(d.ParentSourceID))
	}
	fmt.Fprintf(w, "status\t%s (attempts: %d, retries: %d)\n", d.Status, d.Attempts, d.Retries)
	if d.LastError != "" {
		fmt.Fprintf(w, "last error\t%s\n", shown(d.LastError))
	}
	if d.AcknowledgedAt != nil {
		fmt.Fprintf(w, "acknowledged\tas a known exception by %s at %s: %s\n", shown(strings.TrimPrefix(d.AcknowledgedBy, "manual: ")),
			d.AcknowledgedAt.UTC().Format(time.RFC3339), shown(d.AcknowledgedReason))
	}
	if d.NextAttemptAt != nil {
		fmt.Fprintf(w, "next attempt\t%s\n", d.NextAttemptAt.UTC().Format(time.RFC3339))
	}
	if d.TargetID != "" {
		fmt.Fprintf(w, "on the target\t%s (imported %s)\n", shown(d.TargetID), d.ImportedAt.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintln(w, "on the target\tnot imported")
	}
	fmt.Fprintf(w, "read\t%s (payload last changed %s, checksum %s)\n", d.FetchedAt.UTC().Format(time.RFC3339),
		d.UpdatedAt.UTC().Format(time.RFC3339), shown(d.Checksum))
	for _, name := range slices.Sorted(maps.Keys(d.Dates)) {
		fmt.Fprintf(w, "date %s\t%s\n", shown(name), describeDate(d.Dates[name]))
	}
	fmt.Fprintln(w, "\nhistory")
	writeHistory(w, hist)
	if err := w.Flush(); err != nil {
		return err
	}
	var payload bytes.Buffer
	if err := json.Indent(&payload, d.Payload, "", "  "); err != nil {
		payload.Write(d.Payload)
	}
	fmt.Fprintf(app.stdout, "\npayload (as read from the portal)\n%s\n", shownBlock(payload.String()))
	return nil
}

// describeDate shows a date as kept: the value received, its UTC instant and offset, or why it
// could not be read.
func describeDate(d engine.Date) string {
	switch {
	case d.Err != "":
		return fmt.Sprintf("%s: unreadable: %s", shown(fmt.Sprintf("%q", d.Raw)), shown(d.Err))
	case d.Raw == "":
		return "(empty)"
	}
	s := fmt.Sprintf("%s = %s UTC, offset %s", shown(fmt.Sprintf("%q", d.Raw)), d.UTC.Format(time.RFC3339), shown(d.Offset))
	if d.Assumed {
		s += " (assumed: the value had none)"
	}
	return s
}

// idList joins ids for a person, at most max of them: --json lists them all.
func idList(ids []string, max int) string {
	shownIDs := make([]string, min(len(ids), max))
	for i := range shownIDs {
		shownIDs[i] = shownCut(ids[i], 40) // the portal's ids, whatever it sent
	}
	if len(ids) <= max {
		return strings.Join(shownIDs, " ")
	}
	return strings.Join(shownIDs, " ") + fmt.Sprintf(" … and %d more (--json lists all)", len(ids)-max)
}
