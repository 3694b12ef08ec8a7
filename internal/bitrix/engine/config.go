package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
)

// Config is what an Engine is built from (New). Registry, Pool and Log are required; a zero
// value elsewhere means the default its field names.
type Config struct {
	// Registry holds the entities the engine migrates (Catalog() for the Bitrix24 migration).
	// Required: the engine knows no entity of its own.
	Registry *Registry
	// Pool is the migration's state in Postgres. Required.
	Pool *pgxpool.Pool
	// Source is the portal; nil for the commands that do not read it (status, set, fields-set).
	Source Source
	// Delegates are other people's own incoming webhooks, by the portal's id of their owner: a
	// KeyWalk with AsUser reads a key that is one of these owners through the owner's webhook,
	// as the owner (a text the portal withholds from an administrator's webhook).
	Delegates map[string]Source
	// Target is the target system; nil for the commands that do not write it (get, plan).
	Target Target
	// Log is the run's logger. Required.
	Log *slog.Logger
	// Metrics receives the seed 000 counters and phase durations; nil means a set of its own
	// that nobody exports.
	Metrics *metrics.Metrics
	// Actor and RunID identify the run in status_history and the page log.
	Actor string
	RunID int64
	// TestLimit, when positive, limits get to the first TestLimit records of the entity (seed
	// 000 test_limit); dependencies they need come along beyond it. 0 means no limit.
	TestLimit int
	// RetryPolicy is the schedule of retryable import failures; nil Delays means
	// retry.Default() (0 s, 2 s, 6 s plus jitter). Its Sleep, if set, is how set waits for the
	// next retry to come due.
	RetryPolicy retry.Policy
	// SourceZone is the portal's time zone, for dates it sends without an offset. Nil means the
	// offset the portal shows in its answers' time.date_start, learned by one call at the
	// start of get.
	SourceZone *time.Location
	// SampleSize is how many IMPORT_OK records verify compares field by field; 0 means 50.
	SampleSize int
	// Concurrency is how many requests a phase keeps in flight at once (BITRIX_CONCURRENCY):
	// get's ID ranges and walks, set's import calls. 0 means 8. At 8 or more, a get whose open ID
	// ranges fit the bucket's burst reads up to 32 of them at once, and the child batches of a
	// page of records go up to Concurrency at once beside the listing. Every request to
	// the portal still waits for the shared rate limiter; concurrency only overlaps answer times.
	Concurrency int
	// MemoryLimit is the memory the process may use, in bytes (GOMEMLIMIT or the container's
	// limit: cmd/ingest); 0 means 512 MiB, the limit of the pods in deploy/. A get keeps no
	// more answers in flight than half of it holds (memory.go).
	MemoryLimit int64
	// Deletions is what set does with the records the portal deleted (BITRIX_DELETIONS): keep
	// them on the target (the zero value) or propagate the deletion (deletions.go).
	Deletions Deletions
	// AllowMassDelete lets a get mark more than a tenth of an entity's records deleted at the
	// source (BITRIX_ALLOW_MASS_DELETE); without it such a pass refuses.
	AllowMassDelete bool
	// Full makes every get pass a full one (--full): every record read again, deletions concluded
	// from the whole listing, instead of a delta pass after a complete one (pass.go).
	Full bool
	// FullEvery is how long after the last full pass a get runs a full one again instead of a
	// delta (BITRIX_FULL_EVERY); 0 means DefaultFullEvery, a week.
	FullEvery time.Duration
	// SkewMargin is how far before the last pass's start (on the portal's clock) a delta pass
	// reads from, and how far the portal's clock may be off this machine's before a delta is not
	// trusted; 0 means DefaultSkewMargin.
	SkewMargin time.Duration
	// Now is the clock for retry schedules, progress and reports; nil means time.Now.
	Now func() time.Time
}

// Defaults of the Config fields whose zero value means "the default".
const (
	// defaultSampleSize is verify's sample when Config.SampleSize is 0.
	defaultSampleSize = 50
)

// ErrConfig is wrapped by New's refusal of a Config.
var ErrConfig = errors.New("invalid engine configuration")

// New returns an engine built from cfg, with the defaults applied to the fields left zero. A
// Config without Registry, Pool or Log, with a negative count or limit, an unknown Deletions
// policy or a nil delegate is refused with an error wrapping ErrConfig that names the field.
func New(cfg Config) (*Engine, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return build(cfg), nil
}

// validate says what is wrong with cfg, field by field, the first problem found.
func (cfg Config) validate() error {
	switch {
	case cfg.Registry == nil:
		return errors.New("no Registry: the engine knows no entity of its own")
	case cfg.Pool == nil:
		return errors.New("no Pool: the migration's state is in Postgres")
	case cfg.Log == nil:
		return errors.New("no Log")
	case cfg.TestLimit < 0:
		return fmt.Errorf("negative TestLimit %d: 0 (no limit) or positive", cfg.TestLimit)
	case cfg.SampleSize < 0:
		return fmt.Errorf("negative SampleSize %d: 0 (the default, %d) or positive", cfg.SampleSize, defaultSampleSize)
	case cfg.Concurrency < 0:
		return fmt.Errorf("negative Concurrency %d: 0 (the default, %d) or positive", cfg.Concurrency, defaultConcurrency)
	case cfg.MemoryLimit < 0:
		return fmt.Errorf("negative MemoryLimit %d: 0 (the default, %d MiB) or positive", cfg.MemoryLimit, defaultMemoryLimit>>20)
	case cfg.FullEvery < 0:
		return fmt.Errorf("negative FullEvery %s: 0 (the default, %s) or positive", cfg.FullEvery, DefaultFullEvery)
	case cfg.SkewMargin < 0:
		return fmt.Errorf("negative SkewMargin %s: 0 (the default, %s) or positive", cfg.SkewMargin, DefaultSkewMargin)
	case cfg.RetryPolicy.Jitter < 0:
		return fmt.Errorf("negative RetryPolicy.Jitter %g", cfg.RetryPolicy.Jitter)
	}
	for i, d := range cfg.RetryPolicy.Delays {
		if d < 0 {
			return fmt.Errorf("negative RetryPolicy.Delays[%d] %s", i, d)
		}
	}
	if cfg.Deletions != "" {
		if _, err := ParseDeletions(string(cfg.Deletions)); err != nil {
			return fmt.Errorf("unknown Deletions policy: %w", err)
		}
	}
	for id, src := range cfg.Delegates {
		if src == nil {
			return fmt.Errorf("nil Source in Delegates[%q]", id)
		}
	}
	return nil
}

// build returns the engine of cfg with its defaults applied, unchecked: New checks first; the
// engine's own tests build parts of an engine (no pool, no log) with it.
func build(cfg Config) *Engine {
	e := &Engine{registry: cfg.Registry, pool: cfg.Pool, source: cfg.Source, delegates: cfg.Delegates,
		target: cfg.Target, log: cfg.Log, metrics: cfg.Metrics, actor: cfg.Actor, runID: cfg.RunID,
		testLimit: cfg.TestLimit, retryPolicy: cfg.RetryPolicy, zone: cfg.SourceZone, sampleSize: cfg.SampleSize,
		concurrency: cfg.Concurrency, memoryLimit: cfg.MemoryLimit, deletions: cfg.Deletions,
		allowMassDelete: cfg.AllowMassDelete, full: cfg.Full, fullEvery: cfg.FullEvery, skewMargin: cfg.SkewMargin,
		now: cfg.Now}
	if e.registry == nil {
		e.registry = &Registry{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.metrics == nil {
		e.metrics = metrics.New()
	}
	if e.retryPolicy.Delays == nil {
		p := retry.Default()
		p.Sleep, p.Rand = cfg.RetryPolicy.Sleep, cfg.RetryPolicy.Rand
		e.retryPolicy = p
	}
	if e.sampleSize == 0 {
		e.sampleSize = defaultSampleSize
	}
	if e.concurrency == 0 {
		e.concurrency = defaultConcurrency
	}
	if e.memoryLimit == 0 {
		e.memoryLimit = defaultMemoryLimit
	}
	if e.deletions == "" {
		e.deletions = DeletionsKeep
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.fullEvery == 0 {
		e.fullEvery = DefaultFullEvery
	}
	if e.skewMargin == 0 {
		e.skewMargin = DefaultSkewMargin
	}
	return e
}
