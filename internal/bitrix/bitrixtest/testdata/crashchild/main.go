// Command crashchild runs fields-get, fields-set, get, set and verify (or the phases
// BITRIX_CRASH_PHASES lists, comma-separated) of every entity (or of those BITRIX_CRASH_ENTITIES
// lists) against the fakes of the conformance tests (bitrixtest), which kill it at random
// moments. It is built by those tests, without the race detector so that a run takes as long as
// it would in production.
//
// It prints "phase <entity> <phase>" as each phase starts and "phase done" at the end; the
// database, portal and target addresses come from the environment.
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

	"github.com/ingest-dev/ingest/internal/bitrix"
	"github.com/ingest-dev/ingest/internal/bitrix/engine"
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
	deletions, err := engine.ParseDeletions(os.Getenv("BITRIX_DELETIONS"))
	if err != nil {
		return err
	}
	// engine.New as the command builds it, its defaults (concurrency, memory, sample) included;
	// only the retry schedule is shorter, so that a kill lands in set, not in its waits.
	e, err := engine.New(engine.Config{Registry: bitrix.Catalog(), Pool: pool, Source: source, Target: target, Log: log,
		Metrics: metrics.New(), Actor: "crash test", RetryPolicy: retry.Policy{Delays: []time.Duration{0, 0, 0}},
		Deletions: deletions})
	if err != nil {
		return err
	}
	entities := bitrix.Catalog().CommandNames()
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
