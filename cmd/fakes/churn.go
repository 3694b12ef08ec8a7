package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ingest-dev/ingest/internal/fakes/bitrixfake"
)

// churnOnSignal changes fraction of the portal's CRM and tasks (bitrixfake.Portal.Churn, issue
// 35's mix) on every SIGUSR1, with seeds 1, 2, ..., and logs what changed, until ctx ends: for
// trying a rerun of a migration by hand (kill -USR1 <pid of fakes>, then ingest bitrix migrate).
func churnOnSignal(ctx context.Context, portal *bitrixfake.Portal, fraction float64, log *slog.Logger) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(sig)
		for seed := int64(1); ; seed++ {
			select {
			case <-ctx.Done():
				return
			case <-sig:
			}
			rep := portal.Churn(seed, fraction)
			log.Info("bitrix churn", "seed", seed, "changes", rep.Total(), "at", rep.At, "report", rep.String())
		}
	}()
}
