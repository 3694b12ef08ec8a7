package social

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingest-dev/ingest/internal/metrics"
	"github.com/ingest-dev/ingest/internal/retry"
	"github.com/ingest-dev/ingest/internal/social/graph"
	"github.com/ingest-dev/ingest/internal/status"
)

// Defaults of a Syncer.
const (
	// AccountBatch and PostBatch are how many records a sync command picks at a time.
	AccountBatch = 50
	PostBatch    = 100
	// DefaultInterval is how long a synced account waits for its next sync. Stories live 24
	// hours: a connected account must be synced more often than that to catch them all.
	DefaultInterval = 6 * time.Hour
	// DefaultOverlap is how far below the high-water mark a later listing still reads, to
	// refresh the counts of recent posts (and comments of recent comment threads).
	DefaultOverlap = 72 * time.Hour
	// DefaultCursorTTL is how long a stored cursor is trusted to resume a walk; an older one is
	// dropped and the walk starts again from the newest page (Meta: "cursors can quickly become
	// invalid").
	DefaultCursorTTL = time.Hour
)

// Syncer runs the sync commands of one shard. Fields left zero take the defaults above.
type Syncer struct {
	Pool    *pgxpool.Pool
	Graph   *graph.Client
	Sealer  *Sealer
	Gate    *Gate
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Actor and RunID name the run in the status history and the raw store.
	Actor string
	RunID int64
	// Shard is this run's part of the accounts (Index of Count); zero value: all of them.
	Shard status.Shard
	// Interval, Overlap and CursorTTL: see the defaults.
	Interval, Overlap, CursorTTL time.Duration
	// Pause is the pause between two batches (default 1 s; negative: none).
	Pause time.Duration
	// Concurrency is how many accounts the profiles and posts steps, and how many posts the
	// comments step, work at once (default DefaultConcurrency, at most MaxConcurrency; 1: one
	// after another). Every call still goes through Gate, whose budgets are the app's and each
	// token's, whatever the number in flight.
	Concurrency int
	// Providers are the enrichment providers normalize queues posts for.
	Providers []string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// RetryPolicy, when it has delays, replaces the machines' retry schedules (tests).
	RetryPolicy retry.Policy
}

// Stats sums up one sync command.
type Stats struct {
	Records    int            // accounts or posts handled
	Outcomes   map[string]int // by status reached (or "skipped")
	Calls      int            // Graph API requests
	Pages      int            // pages stored in the raw store
	Items      int            // posts, stories or comments read
	Restarts   int            // walks restarted from the newest page after a refused or stale cursor
	Parked     []string       // keys parked during the run, each once: the rest of the run went on without them
	Incomplete int            // walks stopped short of the platform's end (empty pages): resumed by the next run
	Repairs    int            // accounts and posts sent to be walked again in full (Repair)
	Unfinished int            // attempts of earlier runs that never finished, counted as failed ones as this run started
	Truncated  bool           // stopped early (the context ended)
}

func (st *Stats) outcome(s string) {
	if st.Outcomes == nil {
		st.Outcomes = map[string]int{}
	}
	st.Outcomes[s]++
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Syncer) interval() time.Duration  { return orDuration(s.Interval, DefaultInterval) }
func (s *Syncer) overlap() time.Duration   { return orDuration(s.Overlap, DefaultOverlap) }
func (s *Syncer) cursorTTL() time.Duration { return orDuration(s.CursorTTL, DefaultCursorTTL) }

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// shard returns the pick's shard on column ("id" for accounts, "account_id" for their posts).
func (s *Syncer) shard(column string) *status.Shard {
	if s.Shard.Count <= 1 {
		return nil
	}
	return &status.Shard{Column: column, Count: s.Shard.Count, Index: s.Shard.Index}
}

func (s *Syncer) change(reason string) status.Change {
	return status.Change{Reason: reason, Actor: s.Actor, RunID: s.RunID, Attempt: true}
}

func (s *Syncer) pause(ctx context.Context) error {
	d := s.Pause
	switch {
	case d < 0:
		return ctx.Err()
	case d == 0:
		d = time.Second
	}
	return retry.Sleep(ctx, d)
}

// accountRow is what the sync commands read of an account.
type accountRow struct {
	ID                 int64
	Access             string
	Username, IGUserID string
	ViaID              int64
	Status             status.Status
	HWM                *time.Time
	ListCursor         string
	ListCursorAt       *time.Time
	ListNewest         *time.Time
	CycleStarted       *time.Time
	// ListedAt and StoriesAt say when the listing and the stories were last completed: a step
	// completed in the current cycle is not done again by a rerun.
	ListedAt, StoriesAt *time.Time
	// ProfileAt is when the profile was last read: the read that starts a cycle.
	ProfileAt *time.Time
	// FullWalk: the next listing goes to the platform's end, whatever the high-water mark (a
	// repair of a listing an earlier version cut short).
	FullWalk bool
	// owner is the row of the account whose token calls for this one, read with it (creds).
	owner ownerRow
}

// ownerRow is what creds needs of a token's owner; a NULL leaves its field nil.
type ownerRow struct {
	id             *int64
	sealed         []byte
	fingerprint    *string
	igID, username *string
	status         *string
}

// doneThisCycle reports whether a step completed at t belongs to the current cycle.
func (a *accountRow) doneThisCycle(t *time.Time) bool {
	return t != nil && a.CycleStarted != nil && !t.Before(*a.CycleStarted)
}

// cycleUnfinished reports whether the account's current cycle started and still has a posts
// step to do: a retry from sync_retry goes on with that cycle (its listing resumes from its
// cursor). A sync_retry without one is a profile read that failed as its cycle began (never
// begun, or the last one complete): the retried read starts the cycle, or a listing completed in
// it would not count as done and a rerun of the posts step would list its pages again.
func (a *accountRow) cycleUnfinished() bool {
	return a.CycleStarted != nil && !(a.doneThisCycle(a.ListedAt) && (a.Access != Connected || a.doneThisCycle(a.StoriesAt)))
}

func loadAccount(ctx context.Context, db interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, id int64) (*accountRow, error) {
	a := &accountRow{ID: id}
	var username, igID, cursor *string
	var via *int64
	var st string
	// The token's owner (the account itself, or its viewer for business discovery) is read in
	// the same statement: creds would otherwise read it by id again, a plan and a round trip an
	// account and step (issue 34).
	o := &a.owner
	err := db.QueryRow(ctx, `SELECT a.access, a.username, a.ig_user_id, a.via_account_id, a.status, a.posts_hwm_at, a.list_cursor, a.list_cursor_at,
a.list_newest_at, a.cycle_started_at, a.listed_at, a.stories_synced_at, a.full_walk, a.profile_synced_at,
o.id, o.token_sealed, o.token_fingerprint, o.ig_user_id, o.username, o.status
FROM social_accounts a LEFT JOIN social_accounts o ON o.id = coalesce(a.via_account_id, a.id) WHERE a.id = $1`, id).
		Scan(&a.Access, &username, &igID, &via, &st, &a.HWM, &cursor, &a.ListCursorAt, &a.ListNewest, &a.CycleStarted, &a.ListedAt, &a.StoriesAt, &a.FullWalk,
			&a.ProfileAt, &o.id, &o.sealed, &o.fingerprint, &o.igID, &o.username, &o.status)
	if err != nil {
		return nil, fmt.Errorf("load account %d: %w", id, err)
	}
	a.Username, a.IGUserID, a.ListCursor = deref(username), deref(igID), deref(cursor)
	if via != nil {
		a.ViaID = *via
	}
	a.Status = status.Status(st)
	return a, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// name is how logs and reasons name an account.
func (a *accountRow) name() string {
	if a.Username != "" {
		return "@" + a.Username
	}
	return "ig:" + a.IGUserID
}

// creds is how to call the platform for an account: the token (its own, or its viewer's for
// business discovery), the node business discovery is asked on, and whose token it is.
type creds struct {
	token, fingerprint string
	node               string // the viewer's IG user id (business discovery)
	// discovery: the calls are business discovery, counted against the app's Platform Rate
	// Limits (AppKey); a connected account's calls against its token's Business Use Case budget.
	discovery bool
	ownerID   int64 // the account whose token this is
	ownerName string
}

func (c creds) tokenKey() string { return TokenKey(c.fingerprint) }

// parkKeys are the budgets a call with c is counted against, per Meta's rate-limiting
// documentation: business discovery the app's Platform Rate Limits, a connected account's calls
// its token's Business Use Case budget. A parked budget stops those calls only.
func (c creds) parkKeys() []string {
	if c.discovery {
		return []string{AppKey}
	}
	return []string{c.tokenKey()}
}

// errNoCreds: the account cannot be synced now for a reason that is not its own (its viewer
// needs attention); it is left as it is.
type errNoCreds struct{ why string }

func (e errNoCreds) Error() string { return e.why }

func (s *Syncer) creds(ctx context.Context, a *accountRow) (creds, error) {
	ownerID := a.ID
	if a.Access == Discovery {
		ownerID = a.ViaID
	}
	var sealed []byte
	var fp, igID, st string
	var username *string
	if o := a.owner; o.id != nil && *o.id == ownerID && o.fingerprint != nil && o.igID != nil && o.status != nil {
		sealed, fp, igID, username, st = o.sealed, *o.fingerprint, *o.igID, o.username, *o.status // read with the account
	} else {
		err := s.Pool.QueryRow(ctx, `SELECT token_sealed, token_fingerprint, ig_user_id, username, status FROM social_accounts WHERE id = $1`, ownerID).
			Scan(&sealed, &fp, &igID, &username, &st)
		if err != nil {
			return creds{}, fmt.Errorf("load the token of account %d: %w", ownerID, err)
		}
	}
	c := creds{fingerprint: fp, node: igID, ownerID: ownerID, ownerName: "@" + deref(username), discovery: a.Access == Discovery}
	if c.ownerName == "@" {
		c.ownerName = "ig:" + igID
	}
	if ownerID != a.ID && status.Status(st) == NeedsAttention {
		return creds{}, errNoCreds{fmt.Sprintf("its viewer %s needs attention (token)", c.ownerName)}
	}
	token, err := s.Sealer.Open(sealed, Network, igID)
	if err != nil {
		return creds{}, err
	}
	c.token = token
	return c, nil
}

// call makes one request for account a with c's token, through the gate: it waits its turn
// while the budget's usage is unknown or near the limit (Gate.Enter), refuses while the
// budget the call counts against is parked (the token's, or the app's for business discovery),
// paces near the limit, reads the usage headers, parks on throttling and counts
// the calls in calls.
func (s *Syncer) call(ctx context.Context, c creds, req graph.Request, calls map[string]int, st *Stats) (*graph.Response, error) {
	keys := c.parkKeys()
	release, err := s.Gate.Enter(ctx, keys...)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := s.Gate.Check(ctx, keys...); err != nil {
		return nil, err
	}
	if err := s.Gate.Pace(ctx, keys...); err != nil {
		return nil, err
	}
	resp, err := s.Graph.Get(ctx, req)
	if err == nil && resp != nil {
		s.cleanAnswer(req, resp)
	}
	n := graph.CallsOf(err)
	if resp != nil {
		n = resp.Calls
		if perr := s.Gate.Observe(ctx, resp.Usage, c.tokenKey()); perr != nil {
			s.noteParked(perr, st)
		}
		s.Gate.Seen(keys...)
	}
	calls[req.Endpoint] += n
	st.Calls += n
	if s.Metrics != nil {
		s.Metrics.Processed.WithLabelValues("graph_calls", req.Endpoint).Add(float64(n))
	}
	if ae, ok := graph.AsAPI(err); ok && ae.Throttled() {
		perr := s.Gate.Throttled(ctx, ae, c.tokenKey(), c.discovery)
		s.noteParked(perr, st)
		return nil, perr
	}
	return resp, err
}

// noteParked adds the keys of the parks in err (one, or several joined) to the run's report,
// each once.
func (s *Syncer) noteParked(err error, st *Stats) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	for _, e := range errs {
		var pe *ParkedError
		if errors.As(e, &pe) && !slices.Contains(st.Parked, pe.Key) {
			st.Parked = append(st.Parked, pe.Key)
		}
	}
}

// addCalls adds a record's calls to its account's cycle counters.
func addCalls(ctx context.Context, db status.DB, accountID int64, calls map[string]int) error {
	if len(calls) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `UPDATE social_accounts SET cycle_calls = `+callsAdded(2)+` WHERE id = $1`, accountID, calls)
	if err != nil {
		return fmt.Errorf("count calls of account %d: %w", accountID, err)
	}
	clear(calls)
	return nil
}

// callsAdded is the account's cycle counters with the calls of parameter $n (a JSON object of
// counts by endpoint) added: the assignment of addCalls, for the statements that update the
// account's row anyway and count the calls with it (one row version and one statement fewer a
// page: a sync cycle counted calls about three times an account, issue 34).
func callsAdded(n int) string {
	return fmt.Sprintf(`cycle_calls || (
    SELECT coalesce(jsonb_object_agg(key, coalesce((cycle_calls->>key)::int, 0) + value::int), '{}')
    FROM jsonb_each_text($%d::jsonb))`, n)
}

// outcome of a failed call for one record: what to do with it.
type failure struct {
	// to is the status to move to (empty: leave the record where it is).
	to status.Status
	// retryable: schedule a retry through the machine's Fail.
	retryable bool
	// attention: the token's owner needs a person (expired, revoked, missing permission).
	attention bool
	// stop: stop the whole run (the app is parked, or the context ended).
	stop   bool
	reason string
}

// classify turns a call's error into what happens to the record: throttling leaves it in
// place (its budget is parked: the token's, or the app's for business discovery; the run goes
// on with everything else); an invalid token needs a person; retryable errors are scheduled; anything else is
// permanent for that record.
func classify(ctx context.Context, err error) failure {
	var pe *ParkedError
	var nc errNoCreds
	switch {
	case ctx.Err() != nil:
		return failure{stop: true, reason: "stopped"}
	case errors.As(err, &pe):
		return failure{reason: pe.Error()}
	case errors.As(err, &nc):
		return failure{reason: nc.why}
	case errors.Is(err, ErrNoTokenKey), errors.Is(err, ErrWrongTokenKey):
		return failure{stop: true, reason: err.Error()}
	}
	if ae, ok := graph.AsAPI(err); ok {
		switch {
		case ae.TokenInvalid():
			return failure{attention: true, reason: "access token expired or revoked: " + err.Error()}
		case ae.Permission():
			return failure{attention: true, reason: "missing permission: " + err.Error()}
		case ae.Retryable():
			return failure{retryable: true, reason: err.Error()}
		}
		return failure{reason: err.Error()}
	}
	if graph.IsRetryable(err) {
		return failure{retryable: true, reason: err.Error()}
	}
	return failure{reason: err.Error()}
}

// needsAttention moves the token's owner to NeedsAttention, whatever it is doing (the token is
// dead for every use), recording why.
func (s *Syncer) needsAttention(ctx context.Context, ownerID int64, reason string) error {
	cur, err := Accounts.Current(ctx, s.Pool, ownerID)
	if err != nil {
		return err
	}
	if cur == NeedsAttention || !Accounts.AllowsAuto(cur, NeedsAttention) {
		return nil
	}
	_, err = Accounts.Move(ctx, s.Pool, ownerID, cur, NeedsAttention, s.change(reason))
	return err
}

// failAccount records a failed step of account a (in status from) and says whether the run
// must stop.
func (s *Syncer) failAccount(ctx context.Context, a *accountRow, c creds, from status.Status, err error, st *Stats) (stop bool, _ error) {
	f := classify(ctx, err)
	log := s.Log.With("account_id", a.ID, "account", a.name())
	switch {
	case f.stop:
		log.Warn("run stops", "reason", f.reason)
		return true, nil
	case f.attention:
		log.Warn("account needs attention", "token_of", c.ownerName, "reason", f.reason)
		st.outcome(string(NeedsAttention))
		return false, s.needsAttention(ctx, c.ownerID, f.reason)
	case f.to == "" && !f.retryable && isLeftAlone(err):
		log.Info("account left for later", "reason", f.reason)
		st.outcome("skipped")
		return false, nil
	}
	out, ferr := Accounts.Fail(ctx, s.Pool, a.ID, from, status.Failure{Cause: f.reason, Retryable: f.retryable, Policy: s.RetryPolicy, Now: s.now()}, s.change(""))
	if ferr != nil {
		return false, ferr
	}
	if out.Moved {
		log.Warn("account sync failed", "status", out.To, "retries", out.Retries, "reason", out.Reason)
		st.outcome(string(out.To))
	}
	return false, nil
}

// isLeftAlone: errors that are not the record's fault and leave it in place.
func isLeftAlone(err error) bool {
	var pe *ParkedError
	var nc errNoCreds
	return errors.As(err, &pe) || errors.As(err, &nc)
}

// inTx runs fn in a transaction.
func (s *Syncer) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.Pool, fn)
}

// inWriteTx runs fn in a transaction whose statements are planned once per connection
// (plan_cache_mode auto) rather than at every execution as the pool's sessions are (TunePool):
// for the transactions that store a page or a batch, whose statements select by id or by
// arrays of ids, so a generic plan is as good as a custom one. The foreign keys' checks of
// their inserts (one a row written) were otherwise planned at every row: a third of
// Postgres's time in a sync cycle went to planning (docs/benchmarks.md, issue 34). Never for a
// pick or a scan by status, whose best plan depends on the values; the status machines' moves
// inside it go through customPlanned. The setting is sent with the BEGIN, in one round trip.
func (s *Syncer) inWriteTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.Pool, writeTxOptions, fn)
}

// writeTxOptions begins a write transaction and sets its plan mode (inWriteTx).
var writeTxOptions = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL plan_cache_mode = auto"}

// customPlanned runs a statement inside a write transaction (inWriteTx) with a custom plan, as
// on the pool's sessions, and sets the transaction's mode back after it, in the statement's own
// round trip (a batch of three): for the status machines' moves, and for the statements whose
// generic plan, made once for the connection while a table was small, reads the whole table.
// A move selects by id and status (id = ANY($1) AND status = $2): planned once on a table whose
// statistics do not know yet that a status is crowded (never analyzed, or analyzed before a
// step filled it), the generic plan read the status's whole range of its index at every move,
// 0.5 ms a move at 500 accounts and growing with the shard, where the custom plan reads the
// primary key (issue 34).
type customPlanned struct{ tx pgx.Tx }

const (
	customPlans = "SET LOCAL plan_cache_mode = force_custom_plan"
	autoPlans   = "SET LOCAL plan_cache_mode = auto"
)

func (m customPlanned) send(ctx context.Context, sql string, args []any) pgx.BatchResults {
	b := &pgx.Batch{}
	b.Queue(customPlans)
	b.Queue(sql, args...)
	b.Queue(autoPlans)
	return m.tx.SendBatch(ctx, b)
}

// Exec runs sql with a custom plan.
func (m customPlanned) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br := m.send(ctx, sql, args)
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	return tag, errors.Join(err, br.Close())
}

// Query runs sql with a custom plan; closing the rows reads the rest of the batch.
func (m customPlanned) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br := m.send(ctx, sql, args)
	if _, err := br.Exec(); err != nil {
		return nil, errors.Join(err, br.Close())
	}
	rows, err := br.Query()
	if err != nil {
		rows.Close()
		return nil, errors.Join(err, br.Close())
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow runs sql with a custom plan.
func (m customPlanned) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := m.Query(ctx, sql, args...)
	return batchRow{rows: rows, err: err}
}

// genericPlanned runs a read by primary key on the pool with the connection's cached plan
// (plan_cache_mode auto for the statement, then back to the session's setting, in the
// statement's round trip): the pool's sessions plan every statement anew (TunePool), and the
// plan of a read of an account by id, on a table of six indexes some of them partial, cost six
// times its execution (0.24 ms of 0.28, issue 34). Only for statements whose plan cannot depend
// on the values: an error rolls the setting back with the pipeline's implicit transaction.
type genericPlanned struct{ pool *pgxpool.Pool }

// QueryRow runs sql with the connection's cached plan.
func (g genericPlanned) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	b := &pgx.Batch{}
	b.Queue("SET plan_cache_mode = auto")
	b.Queue(sql, args...)
	b.Queue("RESET plan_cache_mode")
	br := g.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		return batchRow{err: errors.Join(err, br.Close())}
	}
	rows, err := br.Query()
	if err != nil {
		rows.Close()
		return batchRow{err: errors.Join(err, br.Close())}
	}
	return batchRow{rows: &batchRows{Rows: rows, br: br}}
}

// batchRows are the rows of customPlanned.Query: closing them closes the batch.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	err    error
	closed bool
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.err = r.br.Close()
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is customPlanned.QueryRow's row, read as pgx reads one.
type batchRow struct {
	rows pgx.Rows
	err  error
}

func (r batchRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
