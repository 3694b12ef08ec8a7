package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/bitrix/rest"
	"github.com/ingest-dev/ingest/internal/importapi"
	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
)

// Source is the Bitrix24 portal the migration reads from; *rest.Client implements it.
type Source interface {
	Call(ctx context.Context, method string, params any) (*rest.Response, error)
	Batch(ctx context.Context, cmds []rest.Command, halt bool) (*rest.BatchResult, error)
	ScanBounds(ctx context.Context, s rest.Scan, after string) (rest.Bounds, error)
	ScanSegments(ctx context.Context, s rest.Scan, segs []rest.Segment) ([][]rest.Page, error)
	ListByStart(ctx context.Context, l rest.List, start int, fn func(rest.Page) error) error
}

// Target is the system the migration imports into (docs/target-import-api.md);
// *importapi.Client implements it over HTTP.
type Target interface {
	Import(ctx context.Context, entity string, items []importapi.Item) ([]importapi.Result, error)
	Count(ctx context.Context, entity string) (int64, error)
	GetByKeys(ctx context.Context, entity string, keys []string) ([]importapi.Record, []string, error)
	List(ctx context.Context, entity, cursor string, limit int) ([]importapi.ListItem, string, error)
	Fields(ctx context.Context, entity string) ([]importapi.Field, error)
	Delete(ctx context.Context, entity string, keys []string) ([]importapi.DeleteResult, error)
	AddFields(ctx context.Context, entity string, fields []importapi.Field) ([]importapi.FieldResult, error)
}

// Engine runs the phases of the migration. One Engine serves one run of one command; its phases
// are not meant to run concurrently. New builds one from a Config.
type Engine struct {
	// The Config the engine was built with, defaults applied (New); Config documents each.
	registry        *Registry
	pool            *pgxpool.Pool
	source          Source
	delegates       map[string]Source
	target          Target
	log             *slog.Logger
	metrics         *metrics.Metrics
	actor           string
	runID           int64
	testLimit       int
	retryPolicy     retry.Policy
	zone            *time.Location
	sampleSize      int
	concurrency     int
	memoryLimit     int64
	deletions       Deletions
	allowMassDelete bool
	full            bool
	fullEvery       time.Duration
	skewMargin      time.Duration
	now             func() time.Time

	// counted holds the portal's counts of scopes that this engine's passes read whole (a
	// listing's total, a delta pass's ID ranges' counts added up), by scope, as runCount:
	// verify's source count in the same run, without asking the portal again for what it
	// answered minutes before (verify_runcounts.go).
	counted sync.Map

	// meOnce guards me, the webhook's user id, and admin, whether it is an administrator, each
	// learned once per engine (webhookUser, webhookAdmin).
	meOnce sync.Mutex
	me     string
	admin  *bool

	// planning holds, while a plan is made (planOf), the lines planned so far by entity: a
	// per-record lister's next pass follows its owners'.
	planning map[string]EntityPlan
	// planAhead, while a rerun is planned, adds up the commands Migrate's prefetch will ask.
	planAhead *AheadPlan
}

// Entity returns the registered entity of that name. Its callers name entities their registry
// declares (a child's Parent, a lister's Of, a hook's own constants) and use the result at once,
// so a missing one is a bug in the registry's wiring, not in the portal's data: Entity panics
// with the name rather than return a nil that would fail later, further from the cause.
func (e *Engine) Entity(name string) *Entity {
	ent, ok := e.registry.Entity(name)
	if !ok {
		panic("bitrix: entity " + name + " is not registered")
	}
	return ent
}

func (e *Engine) sleep(ctx context.Context, d time.Duration) error {
	if e.retryPolicy.Sleep != nil {
		return e.retryPolicy.Sleep(ctx, d)
	}
	return retry.Sleep(ctx, d)
}

// sourceZone returns the portal's time zone: SourceZone, or the fixed offset of the portal's
// clock as its answers show it (PHP date('c') in the server's zone). The probe is the entity's
// own list method for an ID that does not exist, without counting: the cheapest call the
// webhook is sure to be allowed. A get that reads the listing's bounds learns the zone from
// that answer instead, saving the probe's request.
func (e *Engine) sourceZone(ctx context.Context, entity string, scan rest.Scan) (*time.Location, error) {
	if e.zone != nil {
		return e.zone, nil
	}
	filterParam := scan.FilterParam
	if filterParam == "" {
		filterParam = "filter"
	}
	params := map[string]any{filterParam: map[string]any{scan.IDFilterField(): 0}, "start": -1}
	for key, v := range scan.Params {
		if key != "select" {
			params[key] = v
		}
	}
	resp, err := e.source.Call(ctx, scan.Method, params)
	if err != nil {
		return nil, fmt.Errorf("get %s: learn the portal's time zone: %w", entity, err)
	}
	return e.clockZone(entity, resp.Time)
}

// clockZone is zoneOf for a get of entity, logged.
func (e *Engine) clockZone(entity string, clock rest.Time) (*time.Location, error) {
	if e.zone != nil {
		return e.zone, nil
	}
	zone, err := e.zoneOf(&rest.Response{Time: clock})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", entity, err)
	}
	e.log.Info("portal time zone learned from its clock", "entity", entity, "offset", zone.String())
	return zone, nil
}

// progress logs one line of a phase's progress: done out of total, rate and ETA.
func (e *Engine) progress(phase, entity string, done int64, total *int64, thisRun int, start time.Time) {
	e.progressStep(phase, "", entity, done, total, thisRun, start)
}

// progressStep is progress for a phase that works in steps (verify lists the target, then
// compares the records with it), each with its own count, rate and ETA.
func (e *Engine) progressStep(phase, step, entity string, done int64, total *int64, thisRun int, start time.Time) {
	took := e.now().Sub(start).Seconds()
	attrs := []any{"entity", entity, "phase", phase, "done", done}
	if step != "" {
		attrs = append(attrs, "step", step)
	}
	if total != nil {
		attrs = append(attrs, "total", *total)
	}
	if took > 0 {
		rate := float64(thisRun) / took
		attrs = append(attrs, "rate_per_s", round1(rate))
		if total != nil && rate > 0 && *total > done {
			attrs = append(attrs, "eta_s", round1(float64(*total-done)/rate))
		}
	}
	e.log.Info("progress", attrs...)
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// MustJSON encodes values that always encode (maps of strings and plain structs), so that
// callers building payloads and reports have no error path that cannot be taken.
func MustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("bitrix: encode %T: %v", v, err))
	}
	return b
}
