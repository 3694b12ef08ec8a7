// Command crashchild is the crash child of the synthetic registry (enginetest.Registry), for the
// conformance test of the engine's own entities (bitrixtest, as its testdata/crashchild is the
// catalog's): it runs the phases of the entities BITRIX_CRASH_ENTITIES lists against the
// database, portal and target the environment names, announcing each, and is killed at random
// moments by the test.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"

	"github.com/ingest-dev/ingest/internal/bitrix/engine"
	"github.com/ingest-dev/ingest/internal/bitrix/engine/enginetest"
	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "crashchild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
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
	reg := enginetest.Registry()
	e := &engine.Engine{Registry: reg, Pool: pool, Source: source, Target: target, Log: log, Metrics: metrics.New(),
		Actor: "crash test", RetryPolicy: retry.Policy{Delays: []time.Duration{0, 0, 0}}}
	if e.Deletions, err = engine.ParseDeletions(os.Getenv("BITRIX_DELETIONS")); err != nil {
		return err
	}
	entities := reg.CommandNames()
	if list := os.Getenv("BITRIX_CRASH_ENTITIES"); list != "" {
		entities = strings.Split(list, ",")
	}
	phases := engine.Phases
	if list := os.Getenv("BITRIX_CRASH_PHASES"); list != "" {
		phases = strings.Split(list, ",")
	}
	for _, entity := range entities {
		for _, phase := range phases {
			fmt.Printf("phase %s %s\n", entity, phase)
			err := e.Phase(ctx, entity, phase)
			// A verify that finds problems is an outcome the test compares, not a crash.
			if err != nil && !errors.Is(err, engine.ErrNotVerified) {
				return fmt.Errorf("%s %s: %w", entity, phase, err)
			}
		}
	}
	fmt.Println("phase done")
	return nil
}
