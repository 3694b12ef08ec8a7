package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/status"
)

// Env is what the engine lends an entity's lister, walker and hooks: the portal, the target, the
// migration's state (Store), the log, the run's identity and the few services they share (the
// portal's time zone, the webhook's user, batches of calls). It is not the Engine: a hook reads
// and stores records, it never starts a phase or changes how the engine runs.
type Env struct{ e *Engine }

// env is the Env the engine gives its entities' code.
func (e *Engine) env() Env { return Env{e: e} }

// Source is the portal.
func (v Env) Source() Source { return v.e.source }

// Target is the target system's import API.
func (v Env) Target() Target { return v.e.target }

// Store is the migration's state in Postgres.
func (v Env) Store() Store { return v.e.store() }

// Log is the run's logger.
func (v Env) Log() *slog.Logger { return v.e.log }

// Change is how the run signs a status change it makes for the reason given.
func (v Env) Change(reason string) status.Change {
	return status.Change{Reason: reason, Actor: v.e.actor, RunID: v.e.runID}
}

// RunID is the run's id, for the page log.
func (v Env) RunID() int64 { return v.e.runID }

// TestLimit is the run's test_limit (seed 000): when positive, get reads the first TestLimit
// records of each entity.
func (v Env) TestLimit() int { return v.e.testLimit }

// Entity returns the registry's entity of that name, for hooks that read or store records of
// an entity other than their own. It panics when the registry has none (see Engine.Entity): a
// hook names entities of its own registry, so a missing one is a wiring bug to fail on at once.
func (v Env) Entity(name string) *Entity { return v.e.Entity(name) }

// Zone returns the portal's time zone: the configured one, or the offset of the portal's clock
// in an answer; nil when none is configured and there is no answer (nothing was read).
func (v Env) Zone(resp *rest.Response) (*time.Location, error) {
	if resp == nil && v.e.zone == nil {
		return nil, nil
	}
	return v.e.zoneOf(resp)
}

// WebhookUser returns the id of the webhook's user (user.current), asked once per engine.
func (v Env) WebhookUser(ctx context.Context) (string, error) { return v.e.webhookUser(ctx) }

// WebhookAdmin reports whether the webhook's user is an administrator (user.admin), asked once
// per engine; entity names who asked, for the warning when the portal does not say.
func (v Env) WebhookAdmin(ctx context.Context, entity string) bool {
	return v.e.webhookAdmin(ctx, entity)
}

// BatchEach sends the commands in batches of 50, one after another, and hands each answer to
// fn (or its error to onErr).
func (v Env) BatchEach(ctx context.Context, cmds []rest.Command, fn func(key string, r *rest.Response) error, onErr func(key string, err error) error) error {
	return v.e.batchEach(ctx, cmds, fn, onErr)
}

// BatchEachConcurrently is BatchEach with up to the engine's Concurrency batches in flight.
func (v Env) BatchEachConcurrently(ctx context.Context, cmds []rest.Command, fn func(key string, r *rest.Response) error, onErr func(key string, err error) error) error {
	return v.e.batchEachConcurrently(ctx, cmds, fn, onErr)
}

// ChildCounts adds to a verify report the count of a child entity's records by status, against
// the source's count of them (-1 when the portal cannot say).
func (v Env) ChildCounts(ctx context.Context, child *Entity, source int64, r *VerifyReport) error {
	return v.e.childCounts(ctx, child, source, r)
}

// Requests counts the requests sent to the portal so far, when the source can say (0 when it
// cannot): what a plan costs.
func (v Env) Requests() int64 { return v.e.stats() }
