package bitrixtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
)

// ChildMain is the whole of a crash child's main for the registry reg: it runs fields-get,
// fields-set, get, set and verify (or the phases BITRIX_CRASH_PHASES lists, comma-separated) of
// every entity of reg (or of those BITRIX_CRASH_ENTITIES lists) against the database, portal and
// target the environment names, with the entities' flags their environment variables set (a
// Case's Env), and exits 1 on an error. It prints "phase <entity> <phase>" as
// each phase starts and "phase done" at the end, which is how Conformance aims its kills.
// A registry is code, so each registry under test has a child of its own (CatalogChild is the
// catalog's), and this is all of it.
func ChildMain(reg *engine.Registry) {
	if err := runChild(context.Background(), reg); err != nil {
		fmt.Fprintln(os.Stderr, "crashchild:", err)
		os.Exit(1)
	}
}

func runChild(ctx context.Context, reg *engine.Registry) error {
	pool, err := pgxpool.New(ctx, os.Getenv("BITRIX_CRASH_DB"))
	if err != nil {
		return err
	}
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	source, err := rest.New(os.Getenv("BITRIX_CRASH_PORTAL"), rest.Options{Limiter: rate.NewLimiter(rate.Inf, 1), Logger: log})
	if err != nil {
		return err
	}
	target, err := importapi.New(os.Getenv("BITRIX_CRASH_TARGET"), importapi.Options{Logger: log})
	if err != nil {
		return err
	}
	deletions, err := engine.ParseDeletions(os.Getenv("BITRIX_DELETIONS"))
	if err != nil {
		return err
	}
	if err := applyFlags(reg); err != nil {
		return err
	}
	// engine.New as the command builds it, its defaults (concurrency, memory, sample) included;
	// only the retry schedule is shorter, so that a kill lands in set, not in its waits.
	e, err := engine.New(engine.Config{Registry: reg, Pool: pool, Source: source, Target: target, Log: log,
		Metrics: metrics.New(), Actor: "crash test", RetryPolicy: retry.Policy{Delays: []time.Duration{0, 0, 0}},
		Deletions: deletions})
	if err != nil {
		return err
	}
	entities := reg.CommandNames()
	if list := os.Getenv("BITRIX_CRASH_ENTITIES"); list != "" {
		entities = strings.Split(list, ",")
	}
	phases := engine.Phases()
	if list := os.Getenv("BITRIX_CRASH_PHASES"); list != "" {
		phases = nil
		for _, name := range strings.Split(list, ",") {
			p, err := engine.ParsePhase(name)
			if err != nil {
				return err
			}
			phases = append(phases, p)
		}
	}
	for _, entity := range entities {
		for _, phase := range phases {
			fmt.Printf("phase %s %s\n", entity, phase)
			err := e.Phase(ctx, entity, phase)
			// A verify that finds problems (records that cannot be migrated) is an outcome the
			// test compares, not a crash: the next entity goes on, as a person's next run would.
			if err != nil && !errors.Is(err, engine.ErrNotVerified) {
				return fmt.Errorf("%s %s: %w", entity, phase, err)
			}
		}
	}
	fmt.Println("phase done")
	return nil
}

// applyFlags sets the entities' flags (engine.Flag) that their environment variables give, as the
// command line does for `run`, which takes them all: a switch when the variable is true, an
// option with the variable's value.
func applyFlags(reg *engine.Registry) error {
	for _, ent := range reg.Commands() {
		for _, fl := range ent.Flags {
			value := os.Getenv(fl.Env)
			if fl.Env == "" || value == "" {
				continue
			}
			if fl.Placeholder == "" {
				on, err := strconv.ParseBool(value)
				if err != nil {
					return fmt.Errorf("%s: %w", fl.Env, err)
				}
				if !on {
					continue
				}
				value = "true"
			}
			if err := fl.Set(ent, value); err != nil {
				return fmt.Errorf("%s --%s: %w", ent.Name, fl.Name, err)
			}
		}
	}
	return nil
}
